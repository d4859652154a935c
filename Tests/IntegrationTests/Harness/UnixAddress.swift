import Glibc

/// The `sockaddr_un` of a socket path, built once, and the calls that take it.
struct UnixAddress {
    private var address = sockaddr_un()

    init(_ path: String) throws {
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw HarnessError("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
    }

    func bind(_ fd: Int32) -> Int32 {
        withSocketAddress { Glibc.bind(fd, $0, $1) }
    }

    func connect(_ fd: Int32) -> Int32 {
        withSocketAddress { Glibc.connect(fd, $0, $1) }
    }

    private func withSocketAddress<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        withUnsafePointer(to: address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
