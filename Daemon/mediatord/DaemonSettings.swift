import Logging
import MediatorConfiguration
import MediatorDaemon
import MediatorProtocol

/// Where the daemon's settings come from: defaults, then the JSON config
/// file, then flags. Read at start and again on every SIGHUP.
struct DaemonSettings: Sendable {
    var configFile: String?
    /// Flag values by config member name; nil where the flag was not given.
    var flags: [String: Int] = [:]
    var testHooks = false
    /// Folders of component manifests (`--components`, else the instance's defaults).
    var componentDirectories: [String] = []
    /// Folders of access policy files (`--policy`, else the instance's defaults).
    var policyDirectories: [String] = []

    struct Loaded: Sendable {
        var configuration: DaemonConfiguration
        var socketFromConfig: String?
        var metricsListenFromConfig: String?
        /// The `"nats"` member: the bridge to other hosts (docs/scale-out.md).
        var natsFromConfig: JSONValue?

        /// The members read at start only (where the daemon listens), by
        /// name, leaving out those a flag overrides: a SIGHUP that finds
        /// them changed can only say that a restart is needed.
        func startOnlyMembers(socketFlag: String?, metricsListenFlag: String?) -> [String: String] {
            var members: [String: String] = [:]
            if socketFlag == nil { members["socket"] = socketFromConfig }
            if metricsListenFlag == nil { members["metrics_listen"] = metricsListenFromConfig }
            return members
        }
    }

    func load() throws -> Loaded {
        var configuration = DaemonConfiguration()
        var socketFromConfig: String?
        var metricsListenFromConfig: String?
        var natsFromConfig: JSONValue?
        if let configFile {
            let bytes: [UInt8]
            switch BoundedFile.read(configFile, limit: ManifestLoader.maxFileBytes) {
            case .success(let read): bytes = read
            case .failure(.cannotOpen(let reason)), .failure(.cannotRead(let reason)):
                throw SettingsError(description: "cannot read config \(configFile): \(reason)")
            case .failure(.tooLarge):
                throw SettingsError(description: "cannot use config \(configFile): larger than \(ManifestLoader.maxFileBytes) bytes")
            }
            do {
                let json = try JSONParser.parse(bytes)
                try configuration.apply(json: json)
                socketFromConfig = json["socket"]?.stringValue
                metricsListenFromConfig = json["metrics_listen"]?.stringValue
                natsFromConfig = json["nats"]
            } catch {
                throw SettingsError(description: "cannot use config \(configFile): \(error)")
            }
        }
        for (key, value) in flags.sorted(by: { $0.key < $1.key }) {
            guard value > 0 else {
                throw SettingsError(description: "--\(String(key.map { $0 == "_" ? "-" : $0 })) must be positive")
            }
            do { try configuration.set(key, Int64(value)) } catch { throw SettingsError(description: "\(error)") }
        }
        if testHooks { configuration.testHooks = true }
        return Loaded(
            configuration: configuration, socketFromConfig: socketFromConfig,
            metricsListenFromConfig: metricsListenFromConfig, natsFromConfig: natsFromConfig)
    }
}

extension DaemonSettings {
    /// Reads the policy files; problems are logged, and a broken file is skipped.
    func loadPolicy(logger: Logger) -> Policy {
        let (policy, problems) = PolicyLoader(directories: policyDirectories, accounts: SystemAccounts()).load()
        for problem in problems {
            logger.error("access policy problem", metadata: ["file": "\(problem.file)", "member": "\(problem.member ?? "")", "reason": "\(problem.reason)"])
        }
        return policy
    }

    /// Reads the manifests; a bad one is logged (file, member, reason) and
    /// skipped, and handed on for `list` and `status` to report.
    func loadManifests(logger: Logger) -> (manifests: [Manifest], skipped: [SkippedManifest]) {
        let (manifests, skipped) = ManifestLoader(directories: componentDirectories).load()
        for problem in skipped.map(\.problem) {
            logger.error("component manifest skipped", metadata: ["file": "\(problem.file)", "member": "\(problem.member ?? "")", "reason": "\(problem.reason)"])
        }
        return (manifests, skipped)
    }
}

struct SettingsError: Error, CustomStringConvertible {
    var description: String
}
