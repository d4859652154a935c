// FoundationEssentials, not Foundation: the daemon needs no ICU data
// (tens of MiB of mapped memory, docs/benchmark.md "Footprint").
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Subprocess
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Starts component processes for the broker and reports their pid and
/// their end. Their stdout and stderr are the write ends of pipes the host
/// made (``ComponentProcesses``), whose read ends it logs from, one record
/// per line tagged with the target, and keeps open across a re-exec.
struct ProcessSupervisor: Sendable {
    let logger: Logger
    /// The socket the components are told to connect to (`MEDIATOR_SOCKET`).
    let socketPath: String

    /// `output`: the write ends for the child's stdout and stderr, closed
    /// here once it is spawned (or could not be); nil discards its output.
    func spawn(
        _ order: SpawnOrder, output: (stdout: Int32, stderr: Int32)?, started: @escaping @Sendable (Int32) -> Void,
        ended: @escaping @Sendable (ProcessEnd) -> Void
    ) {
        func closeOutput() {
            if let output {
                close(output.stdout)
                close(output.stderr)
            }
        }
        guard !order.arguments.isEmpty else {
            closeOutput()
            ended(.couldNotStart("the manifest's exec is empty"))
            return
        }
        var environment: [Environment.Key: String?] = [
            "MEDIATOR_SOCKET": socketPath, "MEDIATOR_TARGET": order.target,
        ]
        for (key, value) in order.environment { environment[Environment.Key(stringLiteral: key)] = value }
        var options = PlatformOptions()
        // Its own process group, so that a signal reaches a shell's children too.
        options.processGroupID = 0
        var command = order.arguments
        if getuid() == 0, order.user != nil || order.group != nil {
            // Switch users with setpriv at exec time rather than with the
            // spawner's uid options: those make it fork this multi-threaded
            // process, where the child may hang before exec and where the
            // process group is not set.
            do {
                command = try Self.asUser(order.user, group: order.group) + command
            } catch {
                closeOutput()
                ended(.couldNotStart("\(error)"))
                return
            }
        }
        let options2 = options
        let command2 = command
        Task.detached {
            do {
                let (out, err): (FileDescriptor, FileDescriptor)
                if let output {
                    (out, err) = (FileDescriptor(rawValue: output.stdout), FileDescriptor(rawValue: output.stderr))
                } else {
                    out = try FileDescriptor.open("/dev/null", .writeOnly, options: .closeOnExec)
                    err = try FileDescriptor.open("/dev/null", .writeOnly, options: .closeOnExec)
                }
                let result = try await Subprocess.run(
                    .path(FilePath(command2[0])), arguments: Arguments(Array(command2.dropFirst())),
                    environment: .inherit.updating(environment),
                    workingDirectory: order.workingDirectory.map { FilePath($0) }, platformOptions: options2,
                    input: .none, output: .fileDescriptor(out, closeAfterSpawningProcess: true),
                    error: .fileDescriptor(err, closeAfterSpawningProcess: true)
                ) { execution in started(execution.processIdentifier.value) }
                switch result.terminationStatus {
                case .exited(let status): ended(.exited(status))
                case .signaled(let signal): ended(.signaled(signal))
                }
            } catch {
                ended(.couldNotStart("\(error)"))
            }
        }
    }

    static let setpriv = "/usr/bin/setpriv"

    /// The setpriv prefix that runs a command as `user` (with that user's
    /// primary group, or `group`) and no supplementary groups.
    static func asUser(_ user: String?, group: String?) throws -> [String] {
        var prefix = [setpriv]
        var gid: gid_t?
        if let user {
            let account = try account(user)
            prefix.append("--reuid=\(account.uid)")
            gid = account.gid
        }
        if let group { gid = try self.gid(group) }
        if let gid { prefix += ["--regid=\(gid)", "--clear-groups"] }
        return prefix + ["--"]
    }

    struct UnknownAccount: Error, CustomStringConvertible {
        var description: String
    }

    static func account(_ name: String) throws -> (uid: uid_t, gid: gid_t) {
        let entry = uid_t(name).flatMap { getpwuid($0) } ?? getpwnam(name)
        guard let entry else { throw UnknownAccount(description: "no user named \"\(name)\"") }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }

    static func gid(_ name: String) throws -> gid_t {
        if let number = gid_t(name) { return number }
        guard let entry = getgrnam(name) else { throw UnknownAccount(description: "no group named \"\(name)\"") }
        return entry.pointee.gr_gid
    }
}
