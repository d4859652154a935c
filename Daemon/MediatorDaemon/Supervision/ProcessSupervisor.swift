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
/// their end; their stdout and stderr go to the daemon's log, one record per
/// line, tagged with the target.
struct ProcessSupervisor: Sendable {
    let logger: Logger
    /// The socket the components are told to connect to (`MEDIATOR_SOCKET`).
    let socketPath: String

    func spawn(
        _ order: SpawnOrder, started: @escaping @Sendable (Int32) -> Void,
        ended: @escaping @Sendable (ProcessEnd) -> Void
    ) {
        guard !order.arguments.isEmpty else {
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
                ended(.couldNotStart("\(error)"))
                return
            }
        }
        let logger = self.logger
        let target = order.target
        let options2 = options
        let command2 = command
        Task.detached {
            do {
                let result = try await Subprocess.run(
                    .path(FilePath(command2[0])), arguments: Arguments(Array(command2.dropFirst())),
                    environment: .inherit.updating(environment),
                    workingDirectory: order.workingDirectory.map { FilePath($0) }, platformOptions: options2,
                    input: .none, output: .sequence, error: .sequence
                ) { execution in
                    started(execution.processIdentifier.value)
                    let pid = execution.processIdentifier.value
                    async let errors: Void = Self.log(execution.standardError, "stderr", target, pid, logger)
                    await Self.log(execution.standardOutput, "stdout", target, pid, logger)
                    await errors
                }
                switch result.terminationStatus {
                case .exited(let status): ended(.exited(status))
                case .signaled(let signal): ended(.signaled(signal))
                }
            } catch {
                ended(.couldNotStart("\(error)"))
            }
        }
    }

    static func log(_ output: SubprocessOutputSequence, _ stream: String, _ target: String, _ pid: Int32, _ logger: Logger) async {
        do {
            for try await line in output.strings() {
                var text = Substring(line)
                while let last = text.last, last == "\n" || last == "\r" || last == "\r\n" { text = text.dropLast() }
                guard !text.isEmpty else { continue }
                logger.info("\(text)", metadata: ["target": "\(target)", "pid": "\(pid)", "stream": "\(stream)"])
            }
        } catch {
            logger.debug("component output ended", metadata: ["target": "\(target)", "error": "\(error)"])
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
