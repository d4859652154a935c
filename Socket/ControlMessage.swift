#if canImport(Glibc)
import Glibc
#endif

/// The layout of SCM_RIGHTS control messages: glibc's CMSG_* are macros,
/// which Swift does not import.
enum ControlMessage {
    /// CMSG_ALIGN: lengths are rounded to a `size_t`.
    static func align(_ length: Int) -> Int {
        let unit = MemoryLayout<Int>.size
        return (length + unit - 1) & ~(unit - 1)
    }

    static let headerSpace = align(MemoryLayout<cmsghdr>.size)
    static let descriptorSize = MemoryLayout<Int32>.size

    /// CMSG_SPACE: the buffer room one message of `count` descriptors takes.
    static func space(descriptors count: Int) -> Int {
        headerSpace + align(count * descriptorSize)
    }

    /// CMSG_LEN: the `cmsg_len` of a message of `count` descriptors.
    static func length(descriptors count: Int) -> Int {
        headerSpace + count * descriptorSize
    }

    /// Writes one SCM_RIGHTS message holding `descriptors` at the start of
    /// `buffer` (at least ``space(descriptors:)`` bytes, aligned for `cmsghdr`).
    static func writeRights(_ descriptors: [Int32], into buffer: UnsafeMutableRawBufferPointer) {
        var header = cmsghdr()
        header.cmsg_len = length(descriptors: descriptors.count)
        header.cmsg_level = SOL_SOCKET
        header.cmsg_type = Int32(SCM_RIGHTS)
        buffer.storeBytes(of: header, as: cmsghdr.self)
        for (index, descriptor) in descriptors.enumerated() {
            buffer.storeBytes(of: descriptor, toByteOffset: headerSpace + index * descriptorSize, as: Int32.self)
        }
    }

    /// Every descriptor in the SCM_RIGHTS messages of the first `length`
    /// bytes of `buffer`, in order.
    static func readRights(from buffer: UnsafeRawBufferPointer, length: Int) -> [Int32] {
        var descriptors: [Int32] = []
        var offset = 0
        let end = min(length, buffer.count)
        while offset + MemoryLayout<cmsghdr>.size <= end {
            let header = buffer.loadUnaligned(fromByteOffset: offset, as: cmsghdr.self)
            let messageLength = Int(header.cmsg_len)
            guard messageLength >= headerSpace, offset + messageLength <= end else { break }
            if header.cmsg_level == SOL_SOCKET && header.cmsg_type == Int32(SCM_RIGHTS) {
                let count = (messageLength - headerSpace) / descriptorSize
                for index in 0..<count {
                    descriptors.append(buffer.loadUnaligned(
                        fromByteOffset: offset + headerSpace + index * descriptorSize, as: Int32.self))
                }
            }
            offset += align(messageLength)
        }
        return descriptors
    }
}

/// Room for the control message of a read that may bring the most
/// descriptors one message carries, made once and used by every read of
/// one thread (it holds nothing between reads): a temporary one is an
/// allocation per read. Not Sendable: give each thread its own.
package final class ControlSpace {
    let bytes: UnsafeMutableRawBufferPointer

    package init() {
        bytes = .allocate(
            byteCount: ControlMessage.space(descriptors: UnixStreamSocket.maxDescriptorsPerMessage),
            alignment: MemoryLayout<cmsghdr>.alignment)
    }

    deinit { bytes.deallocate() }
}
