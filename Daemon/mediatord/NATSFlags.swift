import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import MediatorNATS
import MediatorNATSBridge
import MediatorDaemon
import MediatorProtocol

/// `mediatord --nats-url ...`: the bridge to other hosts (docs/scale-out.md).
/// Flags win over the config file's `"nats"` member, one setting at a time.
struct NATSFlags: ParsableArguments {
    @Option(name: .customLong("nats-url"), help: ArgumentHelp(
        "A NATS server, nats://HOST:PORT or tls://HOST:PORT, or a comma-separated list of them (repeatable). Turns the bridge to other hosts on.",
        valueName: "url"))
    var urls: [String] = []

    @Option(name: .customLong("nats-export"), help: ArgumentHelp(
        "Local targets served to other hosts: a name or a pattern with * (repeatable).", valueName: "pattern"))
    var exports: [String] = []

    @Option(name: .customLong("nats-import"), help: ArgumentHelp(
        "Remote targets made callable here: a name or a pattern with * (repeatable).", valueName: "pattern"))
    var imports: [String] = []

    @Option(name: .customLong("nats-events"), help: ArgumentHelp(
        "Events forwarded between hosts, both ways: a name, PREFIX.* or * (repeatable; mediator.* never).", valueName: "pattern"))
    var events: [String] = []

    @Option(name: .customLong("nats-prefix"), help: "The first token(s) of the bridge's NATS subjects (default mediator).")
    var prefix: String?

    @Option(name: .customLong("nats-host"), help: "This host's name towards the others (default: the host name, with /user:UID for a user instance and :SOCKET for a socket not the default).")
    var host: String?

    @Option(name: .customLong("nats-max-imports"), help: ArgumentHelp(
        "Remote targets imported at most, from all hosts (default 4096).", valueName: "count"))
    var maxImports: Int?

    @Option(name: .customLong("nats-max-imports-per-host"), help: ArgumentHelp(
        "Remote targets imported at most from one host (default 1024).", valueName: "count"))
    var maxImportsPerHost: Int?

    @Option(name: .customLong("nats-max-fd-bytes"), help: ArgumentHelp(
        "Bytes of sealed memfds one call may carry across hosts, each way (default 268435456, 256 MiB).", valueName: "bytes"))
    var maxFdBytes: Int?

    @Option(name: .customLong("nats-user"), help: "NATS user name; the password comes from --nats-password-file.")
    var user: String?

    @Option(name: .customLong("nats-password-file"), help: ArgumentHelp("A file holding the NATS password.", valueName: "file"))
    var passwordFile: String?

    @Option(name: .customLong("nats-token-file"), help: ArgumentHelp("A file holding a NATS token.", valueName: "file"))
    var tokenFile: String?

    @Option(name: .customLong("nats-creds"), help: ArgumentHelp("A NATS .creds file (user JWT and NKey seed).", valueName: "file"))
    var credentialsFile: String?

    @Option(name: .customLong("nats-nkey"), help: ArgumentHelp("An NKey user's public key (U...); its seed from --nats-nkey-seed.", valueName: "key"))
    var nkeyPublicKey: String?

    @Option(name: .customLong("nats-nkey-seed"), help: ArgumentHelp("A file holding the NKey's seed.", valueName: "file"))
    var nkeySeedFile: String?

    @Option(name: .customLong("nats-tls-ca"), help: ArgumentHelp("PEM file of the CAs to trust for NATS TLS.", valueName: "file"))
    var tlsCA: String?

    @Option(name: .customLong("nats-tls-cert"), help: ArgumentHelp("PEM certificate for NATS TLS client authentication.", valueName: "file"))
    var tlsCertificate: String?

    @Option(name: .customLong("nats-tls-key"), help: ArgumentHelp("PEM key of --nats-tls-cert.", valueName: "file"))
    var tlsKey: String?

    /// The bridge's settings, or nil when no NATS server is given anywhere.
    /// `config` is the config file's `"nats"` member, if any.
    /// `defaultSocketPath` is the socket of this instance (system or user)
    /// when none is given, and `userUID` set for a user instance: both make
    /// the default host name (``NATSBridgeSettings/defaultHost(machine:userUID:socketPath:socketIsDefault:)``).
    func bridgeSettings(
        config: JSONValue?, socketPath: String, defaultSocketPath: String, userUID: UInt32?
    ) throws -> NATSBridgeSettings? {
        func strings(_ key: String) -> [String] { config?[key]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        func string(_ key: String) -> String? { config?[key]?.stringValue }
        // "nats://A,nats://B" as NATS clients take it: two servers.
        let servers = NATSOptions.splitURLs(urls.isEmpty ? strings("urls") : urls)
        guard !servers.isEmpty else { return nil }

        var options = NATSOptions(servers: servers)
        let hostName = host ?? string("host") ?? NATSBridgeSettings.defaultHost(
            machine: Self.hostName(), userUID: userUID, socketPath: socketPath, socketIsDefault: socketPath == defaultSocketPath)
        options.name = "mediatord@\(hostName)"
        options.user = user ?? string("user")
        if let file = passwordFile ?? string("password_file") {
            options.password = try Self.secret(file, "password")
        } else {
            options.password = string("password")
        }
        if let file = tokenFile ?? string("token_file") {
            options.token = try Self.secret(file, "token")
        } else {
            options.token = string("token")
        }
        options.credentialsFile = credentialsFile ?? string("creds")
        options.nkeyPublicKey = nkeyPublicKey ?? string("nkey")
        options.nkeySeedFile = nkeySeedFile ?? string("nkey_seed")
        let tlsConfig = config?["tls"]
        let ca = tlsCA ?? tlsConfig?["ca"]?.stringValue
        let certificate = tlsCertificate ?? tlsConfig?["cert"]?.stringValue
        let key = tlsKey ?? tlsConfig?["key"]?.stringValue
        if ca != nil || certificate != nil || key != nil {
            options.tls = NATSOptions.TLS(caFile: ca, certificateFile: certificate, keyFile: key)
        }

        var settings = NATSBridgeSettings(
            nats: options,
            exports: (exports.isEmpty ? strings("export") : exports).map(TargetPattern.init),
            imports: (imports.isEmpty ? strings("import") : imports).map(TargetPattern.init),
            host: hostName, socketPath: socketPath)
        settings.prefix = prefix ?? string("prefix") ?? "mediator"
        settings.events = events.isEmpty ? strings("events") : events
        if let milliseconds = config?["announce_interval_ms"]?.intValue, milliseconds > 0 {
            settings.announceInterval = .milliseconds(milliseconds)
        }
        if let milliseconds = config?["liveness_timeout_ms"]?.intValue, milliseconds > 0 {
            settings.livenessTimeout = .milliseconds(milliseconds)
        }
        if let count = maxImports ?? config?["max_imports"]?.intValue.map({ Int(clamping: $0) }) { settings.maxImports = count }
        if let count = maxImportsPerHost ?? config?["max_imports_per_host"]?.intValue.map({ Int(clamping: $0) }) {
            settings.maxImportsPerHost = count
        }
        if let bytes = maxFdBytes ?? config?["max_fd_bytes"]?.intValue.map({ Int(clamping: $0) }) {
            settings.maxFdBytes = bytes
        }
        try settings.validate()
        return settings
    }

    /// A secret from a file, without its trailing newline: never on the
    /// command line, where every user can read it.
    static func secret(_ path: String, _ what: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read the NATS \(what) file \(path)")
        }
        var text = String(decoding: data, as: UTF8.self)
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        return text
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
