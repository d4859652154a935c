#if canImport(Glibc)
import Glibc
#endif

/// A connected, non-blocking Unix stream socket that passes descriptors
/// (SCM_RIGHTS) with its bytes.
///
/// It has no event loop: the caller waits for readability or writability
/// (sd-event, epoll) and then calls ``receive(into:descriptorCapacity:)``
/// or ``send(_:descriptors:)``, which never block and report EAGAIN as
/// ``ReceiveOutcome/wouldBlock`` or ``SendOutcome/wouldBlock``. The socket
/// owns its descriptor; it holds no buffers, so it is `Sendable`, but one
/// reader and one writer at a time keep the byte stream in order.
package final class UnixStreamSocket: Sendable {
    /// SCM_MAX_FD: the most descriptors Linux passes in one message.
    package static let maxDescriptorsPerMessage = 253

    package let descriptor: OwnedDescriptor

    private init(owning descriptor: OwnedDescriptor) {
        self.descriptor = descriptor
    }

    /// Connects to the socket at `path`. A Unix connect completes at once
    /// or fails: a listener whose backlog is full gives
    /// `.system(.connect, errno: EAGAIN)` (a non-blocking socket does not
    /// wait), and the caller may try again.
    package static func connect(path: String) throws(SocketError) -> UnixStreamSocket {
        let address = try UnixSocketAddress(path: path)
        let socket = try UnixStreamSocket(owning: newSocketDescriptor())
        let raw = try socket.descriptor.borrowedValue()
        guard address.withSocketAddress({ Glibc.connect(raw, $0, $1) }) == 0 else {
            throw .system(.connect, errno: errno)
        }
        return socket
    }

    /// A connected pair, as `socketpair(2)` makes: for a child process's
    /// end, and for tests.
    package static func pair() throws(SocketError) -> (UnixStreamSocket, UnixStreamSocket) {
        var raw: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &raw) == 0 else { throw .system(.socketpair, errno: errno) }
        return (
            UnixStreamSocket(owning: OwnedDescriptor(taking: raw[0])),
            UnixStreamSocket(owning: OwnedDescriptor(taking: raw[1]))
        )
    }

    /// Adopts a connected Unix stream socket (inherited, or passed by
    /// another process) and makes it non-blocking.
    package convenience init(adopting descriptor: OwnedDescriptor) throws(SocketError) {
        let raw = try descriptor.borrowedValue()
        try Self.requireUnixStream(raw)
        try Self.setNonBlocking(raw)
        self.init(owning: descriptor)
    }

    /// An accepted connection (already non-blocking and close-on-exec).
    static func accepted(_ raw: Int32) -> UnixStreamSocket {
        UnixStreamSocket(owning: OwnedDescriptor(taking: raw))
    }

    /// The process and user at the other end, as of its `connect` (or the
    /// `socketpair` call).
    package func peerCredentials() throws(SocketError) -> UnixCredentials {
        var credentials = UnixCredentials(pid: 0, uid: 0, gid: 0)
        var length = socklen_t(MemoryLayout<UnixCredentials>.size)
        let raw = try descriptor.borrowedValue()
        guard getsockopt(raw, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else {
            throw .system(.getOption, errno: errno)
        }
        return credentials
    }

    /// Reads what is there, at most `buffer.count` bytes, and the
    /// descriptors that came with them, close-on-exec. Room is made for
    /// `descriptorCapacity` descriptors; if more arrived, or this process
    /// is out of descriptors (MSG_CTRUNC both), the ones that did are
    /// closed and the outcome says so. A stream read
    /// never holds descriptors of two messages: the kernel ends a read
    /// after the bytes that carried descriptors.
    ///
    /// `controlSpace` (``ControlSpace``) is where the descriptors' control
    /// message lands; without one, a temporary one is made: the room for
    /// 253 descriptors is past what Swift puts on the stack, so that is an
    /// allocation and a free per read.
    package func receive(
        into buffer: UnsafeMutableRawBufferPointer,
        descriptorCapacity: Int = maxDescriptorsPerMessage,
        controlSpace: ControlSpace? = nil
    ) throws(SocketError) -> ReceiveOutcome {
        guard buffer.baseAddress != nil, buffer.count > 0 else { throw .emptyBuffer }
        let controlSize = ControlMessage.space(descriptors: max(0, min(descriptorCapacity, Self.maxDescriptorsPerMessage)))
        if let controlSpace, controlSpace.bytes.count >= controlSize {
            return try receive(
                into: buffer, descriptorCapacity: descriptorCapacity,
                control: UnsafeMutableRawBufferPointer(rebasing: controlSpace.bytes[0..<controlSize]))
        }
        let result: Result<ReceiveOutcome, SocketError> = withUnsafeTemporaryAllocation(
            byteCount: controlSize, alignment: MemoryLayout<cmsghdr>.alignment
        ) { control in
            Result { () throws(SocketError) -> ReceiveOutcome in
                try receive(into: buffer, descriptorCapacity: descriptorCapacity, control: control)
            }
        }
        return try result.get()
    }

    private func receive(
        into buffer: UnsafeMutableRawBufferPointer, descriptorCapacity: Int, control: UnsafeMutableRawBufferPointer
    ) throws(SocketError) -> ReceiveOutcome {
        guard let base = buffer.baseAddress else { throw .emptyBuffer }
        let raw = try descriptor.borrowedValue()
        var vector = iovec(iov_base: base, iov_len: buffer.count)
        var message = msghdr()
        let (count, code): (Int, Int32) = withUnsafeMutablePointer(to: &vector) { vectorPointer in
            message.msg_iov = vectorPointer
            message.msg_iovlen = 1
            message.msg_control = descriptorCapacity > 0 ? control.baseAddress : nil
            message.msg_controllen = descriptorCapacity > 0 ? control.count : 0
            while true {
                let count = recvmsg(raw, &message, Int32(MSG_CMSG_CLOEXEC))
                if count < 0 && errno == EINTR { continue }
                return (count, count < 0 ? errno : 0)
            }
        }
        if count < 0 {
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            throw .system(.receive, errno: code)
        }
        let arrived = ControlMessage.readRights(
            from: UnsafeRawBufferPointer(control), length: Int(message.msg_controllen)
        ).map { OwnedDescriptor(taking: $0) }
        let truncated = message.msg_flags & Int32(MSG_CTRUNC) != 0
        if truncated {
            for descriptor in arrived { try? descriptor.close() }
        }
        // Zero bytes are the end of the stream; descriptors cannot come
        // without a byte, so none are lost here.
        if count == 0 { return .endOfStream }
        return .received(byteCount: count, descriptors: truncated ? [] : arrived, descriptorsTruncated: truncated)
    }

    /// Writes as much of `bytes` as the socket takes now, with
    /// `descriptors` riding on the first byte (they are only borrowed:
    /// the caller closes them once the outcome says they went).
    /// MSG_NOSIGNAL: a closed peer is an EPIPE error, not a signal.
    package func send(_ bytes: UnsafeRawBufferPointer, descriptors: [OwnedDescriptor] = []) throws(SocketError) -> SendOutcome {
        guard let base = bytes.baseAddress, bytes.count > 0 else { throw .emptyBuffer }
        guard descriptors.count <= Self.maxDescriptorsPerMessage else {
            throw .tooManyDescriptors(count: descriptors.count, maximum: Self.maxDescriptorsPerMessage)
        }
        var numbers: [Int32] = []
        if !descriptors.isEmpty {
            // Reserving even zero allocates.
            numbers.reserveCapacity(descriptors.count)
            for descriptor in descriptors { numbers.append(try descriptor.borrowedValue()) }
        }
        let raw = try descriptor.borrowedValue()
        let controlSize = numbers.isEmpty ? 0 : ControlMessage.space(descriptors: numbers.count)
        let (count, code): (Int, Int32) = withExtendedLifetime(descriptors) {
            withUnsafeTemporaryAllocation(byteCount: max(controlSize, 1), alignment: MemoryLayout<cmsghdr>.alignment) { control in
                var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: base), iov_len: bytes.count)
                var message = msghdr()
                if controlSize > 0 {
                    control.initializeMemory(as: UInt8.self, repeating: 0)
                    ControlMessage.writeRights(numbers, into: control)
                    message.msg_control = control.baseAddress
                    message.msg_controllen = controlSize
                }
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    while true {
                        let count = sendmsg(raw, &message, Int32(MSG_NOSIGNAL))
                        if count < 0 && errno == EINTR { continue }
                        return (count, count < 0 ? errno : 0)
                    }
                }
            }
        }
        if count < 0 {
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            throw .system(.send, errno: code)
        }
        return .sent(byteCount: count)
    }

    /// Closes the socket now rather than when the last reference goes.
    package func close() throws(SocketError) {
        try descriptor.close()
    }

    // MARK: Descriptor set-up shared with UnixListener

    static func newSocketDescriptor() throws(SocketError) -> OwnedDescriptor {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let raw = Glibc.socket(AF_UNIX, type, 0)
        guard raw >= 0 else { throw .system(.socket, errno: errno) }
        return OwnedDescriptor(taking: raw)
    }

    static func integerOption(_ raw: Int32, _ name: Int32) throws(SocketError) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(raw, SOL_SOCKET, name, &value, &length) == 0 else {
            throw .system(.getOption, errno: errno)
        }
        return value
    }

    static func requireUnixStream(_ raw: Int32) throws(SocketError) {
        guard try integerOption(raw, SO_DOMAIN) == AF_UNIX,
              try integerOption(raw, SO_TYPE) == Int32(SOCK_STREAM.rawValue)
        else { throw .notUnixStreamSocket(descriptor: raw) }
    }

    static func setNonBlocking(_ raw: Int32) throws(SocketError) {
        let flags = fcntl(raw, F_GETFL)
        guard flags >= 0, fcntl(raw, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw .system(.fcntl, errno: errno)
        }
    }
}
