import CSystemd
import Glibc

/// The listening socket systemd passed in (`LISTEN_FDS`), if any.
package enum SocketActivation {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// The name `mediatord.socket` gives its socket (`FileDescriptorName=`).
    package static let socketName = "mediator"

    /// The passed socket to adopt: the one named `mediator`, or the only one.
    /// Nil when the daemon was not socket-activated.
    package static func passedSocket() throws(Failure) -> Int32? {
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
            return nil
        }
        var chosen: Int32?
        for index in 0..<Int(count) {
            let name = names?[index].map { String(cString: $0) } ?? ""
            if name == socketName || count == 1 { chosen = SD_LISTEN_FDS_START + Int32(index) }
        }
        guard let fd = chosen else {
            throw Failure(description: "\(count) sockets were passed and none is named \"\(socketName)\" (FileDescriptorName=)")
        }
        guard sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0 else {
            throw Failure(description: "the passed socket (fd \(fd)) is not a listening Unix stream socket")
        }
        return fd
    }
}
