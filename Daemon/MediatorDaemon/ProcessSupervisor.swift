import Foundation
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
        guard let program = order.arguments.first else {
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
        if getuid() == 0 {
            do {
                // A user without a group runs with that user's primary group,
                // and never with root's supplementary groups.
                if let user = order.user {
                    let account = try Self.account(user)
                    options.userID = account.uid
                    options.groupID = account.gid
                }
                if let group = order.group { options.groupID = try Self.gid(group) }
                if let gid = options.groupID { options.supplementaryGroups = [gid] }
            } catch {
                ended(.couldNotStart("\(error)"))
                return
            }
        }
        let logger = self.logger
        let target = order.target
        let options2 = options
        Task.detached {
            do {
                let result = try await Subprocess.run(
                    .path(FilePath(program)), arguments: Arguments(Array(order.arguments.dropFirst())),
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
                let text = line.trimmingCharacters(in: .newlines)
                guard !text.isEmpty else { continue }
                logger.info("\(text)", metadata: ["target": "\(target)", "pid": "\(pid)", "stream": "\(stream)"])
            }
        } catch {
            logger.debug("component output ended", metadata: ["target": "\(target)", "error": "\(error)"])
        }
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
