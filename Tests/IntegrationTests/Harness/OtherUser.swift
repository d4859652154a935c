import Foundation
import MediatorProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Credentials that real client processes run with, switched by util-linux
/// `setpriv --reuid/--regid` from root: the daemon then learns them from the
/// kernel (SO_PEERCRED, SO_PEERGROUPS) exactly as it would for a login of
/// that user. uids such as 4101 need no passwd entry.
///
///     let bob = OtherUser(uid: 4102, gid: 4102, groups: [4200])
///     let outcome = try bob.ctl(daemon, "call", ["Svc", "echo"])
struct OtherUser: Sendable, CustomStringConvertible {
    var uid: UInt32
    var gid: UInt32
    /// Supplementary groups; empty means none at all (`--clear-groups`).
    var groups: [UInt32] = []

    static let nobody = OtherUser(uid: 65534, gid: 65534)

    var description: String { "uid \(uid) gid \(gid) groups \(groups)" }

    /// Whether processes can be started as other uids here: only root may
    /// switch, and setpriv must be installed (util-linux; `.ci/run` installs it).
    static let available: Bool = getuid() == 0 && setpriv != nil

    static let setpriv: String? = ["/usr/bin/setpriv", "/bin/setpriv"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// The words that run a program as this user.
    var launcher: [String] {
        let groupWords =
            groups.isEmpty ? ["--clear-groups"] : ["--groups=" + groups.map { String($0) }.joined(separator: ",")]
        return [Self.setpriv ?? "/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(gid)"] + groupWords + ["--"]
    }

    // MARK: - Running programs

    /// Starts `executable` as this user, kept by `world` (killed at cleanup).
    func spawn(_ world: World, _ executable: String, _ arguments: [String], label: String) throws -> ChildProcess {
        try world.spawn(launcher[0], Array(launcher.dropFirst()) + [executable] + arguments, label: label)
    }

    /// Runs `executable` as this user to its end (bounded).
    func run(
        _ executable: String, _ arguments: [String], directory: String?, within bound: Duration = .seconds(30),
        environment: [String: String]? = nil
    ) throws -> ChildProcess.Outcome {
        try ChildProcess.run(
            launcher[0], Array(launcher.dropFirst()) + [executable] + arguments, within: bound, directory: directory,
            environment: environment)
    }

    /// The real `mediatorctl VERB --socket PATH ARGS...`, run as this user.
    func ctl(_ daemon: DaemonProcess, _ verb: String, _ arguments: [String] = [], within bound: Duration = .seconds(30))
        throws -> ChildProcess.Outcome
    {
        try run(
            try SharedFiles.reachable(Paths.mediatorctl), [verb, "--socket", daemon.socketPath] + arguments,
            directory: daemon.directory.path, within: bound)
    }

    /// A long-running `mediatorctl` (listen, monitor) as this user.
    func spawnCtl(_ world: World, _ daemon: DaemonProcess, _ verb: String, _ arguments: [String] = [], label: String)
        throws -> ChildProcess
    {
        try spawn(world, try SharedFiles.reachable(Paths.mediatorctl), [verb, "--socket", daemon.socketPath] + arguments, label: label)
    }

    /// `Examples/python/notes_component.py` serving `target`, as this user;
    /// waits for its `ready` line (it prints it once registered).
    func notes(_ world: World, _ daemon: DaemonProcess, target: String) throws -> ChildProcess {
        let process = try spawnNotes(world, daemon, target: target)
        try process.waitForLine("ready", within: .seconds(20))
        return process
    }

    /// The same, without waiting (for a registration that is refused).
    func spawnNotes(_ world: World, _ daemon: DaemonProcess, target: String) throws -> ChildProcess {
        try spawn(
            world, try SharedFiles.python(),
            ["-I", "-u", try SharedFiles.reachable(Paths.notesComponent, execute: false), "--socket", daemon.socketPath,
             "--target", target],
            label: "notes-\(target)-\(uid)")
    }

    /// Whether this user may read `path` (with `execute`, run it), as the
    /// kernel decides for that user: every folder above it counts.
    func canAccess(_ path: String, execute: Bool) -> Bool {
        guard let test = ["/usr/bin/test", "/bin/test"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }),
            let outcome = try? run(test, [execute ? "-x" : "-r", path], directory: nil, within: .seconds(10))
        else { return false }
        return outcome.status == 0
    }

    // MARK: - Raw connections made as this user

    /// One raw connection that a process running as this user opened, so
    /// that the daemon holds this user's credentials for it; answered a ping
    /// before it is returned.
    func connect(_ daemon: DaemonProcess) throws -> RawPeer {
        let handed = try connections(daemon, count: 1)
        defer { handed.release() }
        let peer = handed.peers[0]
        _ = try peer.result("mediator", "ping")
        return peer
    }

    /// `count` raw connections opened by a helper process running as this
    /// user and passed to the test over SCM_RIGHTS. The helper stays alive
    /// until ``HandedConnections/release()``, so the daemon can still read
    /// its `/proc/PID/exe` when it accepts them; it has closed its own
    /// copies, so closing a returned peer closes the connection.
    func connections(_ daemon: DaemonProcess, count: Int) throws -> HandedConnections {
        let directory = daemon.directory
        let exchangePath = directory.file("x\(SharedFiles.counter.next()).sock")
        let listener = try FileExchange.listen(exchangePath)
        var keepListener = true
        defer { if keepListener { Glibc.close(listener) } }
        let script = try SharedFiles.connectorScript()
        let helper = try ChildProcess(
            launcher[0],
            Array(launcher.dropFirst())
                + [try SharedFiles.python(), "-I", script, daemon.socketPath, exchangePath, String(count)],
            label: "connector-\(uid)", directory: directory.path)
        do {
            let exchange = try FileExchange.accept(listener, from: helper)
            Glibc.close(listener)
            keepListener = false
            let fds: [Int32]
            do {
                fds = try FileExchange.receive(count, on: exchange, from: helper)
            } catch {
                Glibc.close(exchange)
                throw error
            }
            return HandedConnections(
                peers: fds.map { RawPeer(adopting: $0, path: daemon.socketPath) }, exchange: exchange, helper: helper)
        } catch {
            helper.kill()
            throw error
        }
    }
}

/// Connections a helper process opened as another user; see
/// ``OtherUser/connections(_:count:)``.
final class HandedConnections: @unchecked Sendable {
    let peers: [RawPeer]
    let helper: ChildProcess
    private var exchange: Int32

    init(peers: [RawPeer], exchange: Int32, helper: ChildProcess) {
        self.peers = peers
        self.exchange = exchange
        self.helper = helper
    }

    /// Lets the helper exit (it waits for the end of the exchange socket).
    func release() {
        if exchange >= 0 {
            Glibc.close(exchange)
            exchange = -1
        }
        _ = try? helper.waitForExit(within: .seconds(10))
        helper.kill()
    }

    deinit { release() }
}

/// SCM_RIGHTS over a SOCK_SEQPACKET socket, which keeps each batch of
/// descriptors with its own message.
enum FileExchange {
    /// Descriptors per message: under the kernel's SCM_MAX_FD (253).
    static let batch = 200

    static func listen(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        let address: UnixAddress
        do {
            address = try UnixAddress(path)
        } catch {
            Glibc.close(fd)
            throw error
        }
        let bound = address.bind(fd)
        // The helper runs as another uid: it needs write permission to connect.
        guard bound == 0, chmod(path, 0o777) == 0, Glibc.listen(fd, 1) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw HarnessError("cannot listen on \(path): \(reason)")
        }
        return fd
    }

    /// The helper's connection to `listener`, or why it never came.
    static func accept(_ listener: Int32, from helper: ChildProcess, within bound: Duration = .seconds(20)) throws -> Int32 {
        var accepted: Int32 = -1
        try waitUntil("\(helper.label) to connect back\(helper.logTail())", within: bound, every: .milliseconds(5)) {
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 0) > 0 {
                // (accept4 needs _GNU_SOURCE, which Swift's Glibc lacks.)
                accepted = Glibc.accept(listener, nil, nil)
                if accepted >= 0 {
                    _ = fcntl(accepted, F_SETFD, FD_CLOEXEC)
                    return true
                }
            }
            if let ended = helper.termination {
                throw HarnessError("\(helper.label) ended (\(ended)) before connecting back\(helper.logTail())")
            }
            return false
        }
        return accepted
    }

    /// Reads messages until `count` descriptors came (each received
    /// close-on-exec, so later children do not inherit them).
    static func receive(_ count: Int, on exchange: Int32, from helper: ChildProcess, within bound: Duration = .seconds(20))
        throws -> [Int32]
    {
        let headerSize = MemoryLayout<cmsghdr>.size
        let controlSize = headerSize + batch * MemoryLayout<Int32>.size + 8
        let control = UnsafeMutableRawPointer.allocate(byteCount: controlSize, alignment: MemoryLayout<cmsghdr>.alignment)
        defer { control.deallocate() }
        var data = [UInt8](repeating: 0, count: 32)
        var fds: [Int32] = []
        let deadline = ContinuousClock.now + bound
        while fds.count < count {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                throw HarnessError("\(helper.label) passed \(fds.count) of \(count) connections\(helper.logTail())")
            }
            var descriptor = pollfd(fd: exchange, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, Int32(clamping: max(1, remaining.milliseconds))) <= 0 { continue }
            control.initializeMemory(as: UInt8.self, repeating: 0, count: controlSize)
            let received = data.withUnsafeMutableBytes { buffer -> Int in
                var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var message = msghdr()
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    message.msg_control = control
                    message.msg_controllen = controlSize
                    let count = recvmsg(exchange, &message, Int32(MSG_CMSG_CLOEXEC))
                    if count >= 0, message.msg_flags & Int32(MSG_CTRUNC) != 0 { return -2 }
                    return count
                }
            }
            if received == -2 { throw HarnessError("descriptors were cut off (MSG_CTRUNC)") }
            if received < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw HarnessError("recvmsg: \(String(cString: strerror(errno)))")
            }
            if received == 0 {
                throw HarnessError("\(helper.label) hung up after \(fds.count) of \(count) connections\(helper.logTail())")
            }
            // One SCM_RIGHTS header per message, as the helper sends them.
            let header = control.load(as: cmsghdr.self)
            guard header.cmsg_level == SOL_SOCKET, header.cmsg_type == Int32(SCM_RIGHTS) else {
                throw HarnessError("a message from \(helper.label) without descriptors")
            }
            let carried = (Int(header.cmsg_len) - headerSize) / MemoryLayout<Int32>.size
            for index in 0..<carried {
                fds.append(control.load(fromByteOffset: headerSize + index * MemoryLayout<Int32>.size, as: Int32.self))
            }
        }
        return fds
    }
}

/// Files that processes running as other uids must reach: the executables
/// and scripts (copied to a shared folder when the user cannot reach them
/// where they are, e.g. a clone under /root, which is 0700), the Python
/// interpreter, and the connector script.
enum SharedFiles {
    static let counter = Counter()
    private static let lock = NSLock()
    nonisolated(unsafe) private static var copies: [String: String] = [:]
    nonisolated(unsafe) private static var folder: String?
    nonisolated(unsafe) private static var interpreter: String?

    /// Whom accessibility is checked for: an unprivileged uid without groups.
    static let probe = OtherUser(uid: 4199, gid: 4199)

    /// `path` when an unprivileged uid can use it, else a copy (mode 0755)
    /// in a folder every uid can reach; made once per test process.
    static func reachable(_ path: String, execute: Bool = true) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let known = copies[path] { return known }
        if probe.canAccess(path, execute: execute) {
            copies[path] = path
            return path
        }
        let folder = try sharedFolder()
        let copy = "\(folder)/\(copies.count)-\(URL(fileURLWithPath: path).lastPathComponent)"
        do {
            try FileManager.default.copyItem(atPath: path, toPath: copy)
        } catch {
            throw HarnessError("cannot copy \(path) to \(copy) for other uids: \(error)")
        }
        chmod(copy, 0o755)
        guard probe.canAccess(copy, execute: execute) else {
            throw HarnessError("\(copy) is not usable by \(probe) even as a copy")
        }
        copies[path] = copy
        return copy
    }

    /// A Python interpreter other uids can run: the one the other tests use
    /// when it is reachable (a pyenv under /root is not), else /usr/bin/python3.
    static func python() throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let interpreter { return interpreter }
        for candidate in [Paths.python, "/usr/bin/python3"] {
            if let outcome = try? probe.run(candidate, ["-I", "-c", "import socket; socket.send_fds"], directory: nil),
                outcome.status == 0
            {
                interpreter = candidate
                return candidate
            }
        }
        throw HarnessError("no Python 3.9+ that \(probe) can run (tried \(Paths.python) and /usr/bin/python3)")
    }

    /// The connector: opens N connections as its user, passes them back over
    /// the exchange socket, then waits for the test to hang up.
    static func connectorScript() throws -> String {
        let text = """
            import socket, sys
            daemon_path, exchange_path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
            held = []
            for _ in range(count):
                connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    connection.connect(daemon_path)
                except OSError as error:
                    sys.exit("connect %s: %s" % (daemon_path, error))
                held.append(connection)
            exchange = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            exchange.connect(exchange_path)
            for start in range(0, count, \(FileExchange.batch)):
                batch = held[start:start + \(FileExchange.batch)]
                socket.send_fds(exchange, [b"%d" % len(batch)], [c.fileno() for c in batch])
            for connection in held:
                connection.close()
            exchange.recv(1)  # alive until the test hangs up

            """
        lock.lock()
        defer { lock.unlock() }
        let path = try sharedFolder() + "/connector.py"
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
                throw HarnessError("cannot write \(path)")
            }
            chmod(path, 0o644)
        }
        return path
    }

    /// `/tmp/mi-shared.PID` (mode 0755), removed when the test process exits.
    private static func sharedFolder() throws -> String {
        if let folder { return folder }
        let base = ProcessInfo.processInfo.environment["MEDIATOR_TEST_TMP"] ?? "/tmp"
        let path = "\(base)/mi-shared.\(getpid())"
        guard mkdir(path, 0o755) == 0 || errno == EEXIST, chmod(path, 0o755) == 0 else {
            throw HarnessError("mkdir \(path): \(String(cString: strerror(errno)))")
        }
        folder = path
        sharedFolderForExit = strdup(path)
        atexit {
            if let path = sharedFolderForExit {
                try? FileManager.default.removeItem(atPath: String(cString: path))
            }
        }
        return path
    }
}

nonisolated(unsafe) private var sharedFolderForExit: UnsafeMutablePointer<CChar>?

extension World {
    /// A daemon that other uids can reach and that reads `policy` as its
    /// only policy file: the test folder becomes 0755 (it is 0700) and the
    /// socket 0666, both checked.
    func daemon(policy: JSONValue, _ arguments: [String] = []) throws -> DaemonProcess {
        let folder = directory.file("policy.d")
        guard mkdir(folder, 0o755) == 0 || errno == EEXIST else {
            throw HarnessError("mkdir \(folder): \(String(cString: strerror(errno)))")
        }
        let file = folder + "/10-test.json"
        // Owned by root and not writable by others, or the daemon refuses it.
        guard FileManager.default.createFile(atPath: file, contents: Data(policy.encoded)), chmod(file, 0o644) == 0 else {
            throw HarnessError("cannot write \(file)")
        }
        try shareDirectory()
        let daemon = try self.daemon(["--policy", folder, "--socket-mode", "0666"] + arguments)
        var info = stat()
        guard stat(daemon.socketPath, &info) == 0, info.st_mode & 0o777 == 0o666 else {
            throw HarnessError("the socket \(daemon.socketPath) is not mode 0666")
        }
        return daemon
    }

    /// Opens the test folder to other uids (they need to reach the socket).
    func shareDirectory() throws {
        guard chmod(directory.path, 0o755) == 0 else {
            throw HarnessError("chmod \(directory.path): \(String(cString: strerror(errno)))")
        }
        guard SharedFiles.probe.canAccess(directory.path, execute: true) else {
            throw HarnessError(
                "\(directory.path) is not reachable by other uids: a folder above it is closed (set MEDIATOR_TEST_TMP)")
        }
    }
}
