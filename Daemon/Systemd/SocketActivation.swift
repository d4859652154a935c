import CSystemd
import Glibc

/// The listening socket systemd passed in (`LISTEN_FDS`), if any.
package enum SocketActivation {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// The name `mediatord.socket` gives its socket (`FileDescriptorName=`).
    package static let socketName = "mediator"

    /// What systemd passed in: the listening socket (the one named
    /// `mediator`, or the only one) and the connections a predecessor kept
    /// in the fd store, by their names (``FileDescriptorStore``).
    package struct Passed: Sendable {
        package var listener: Int32?
        /// Stored descriptors with their names, the listener left out.
        package var stored: [(name: String, fd: Int32)] = []

        package init() {}
    }

    /// The passed socket to adopt: the one named `mediator`, or the only one.
    /// Nil when the daemon was not socket-activated.
    package static func passedSocket() throws(Failure) -> Int32? {
        try passed().listener
    }

    /// Everything passed; read once (the environment is unset).
    package static func passed() throws(Failure) -> Passed {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        // Called once, with unset_environment: children must not inherit it.
        let count = sd_listen_fds_with_names(1, &names)
        defer {
            if let names {
                for index in 0..<Int(max(count, 0)) { free(names[index]) }
                free(names)
            }
        }
        guard count > 0 else {
            if count < 0 { throw Failure(description: "cannot read the passed sockets: \(String(cString: strerror(-count)))") }
            return Passed()
        }
        var passed = Passed()
        for index in 0..<Int(count) {
            let name = names?[index].map { String(cString: $0) } ?? ""
            let fd = SD_LISTEN_FDS_START + Int32(index)
            if name == socketName || count == 1 {
                passed.listener = fd
            } else {
                passed.stored.append((name, fd))
            }
        }
        guard let fd = passed.listener else {
            throw Failure(description: "\(count) sockets were passed and none is named \"\(socketName)\" (FileDescriptorName=)")
        }
        guard sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0 else {
            throw Failure(description: "the passed socket (fd \(fd)) is not a listening Unix stream socket")
        }
        return passed
    }
}
