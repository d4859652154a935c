import CNats
#if canImport(Glibc)
import Glibc
#endif

/// How to reach the NATS servers: the `natsOptions` of one connection, as
/// plain values (checked here, turned into libnats options on connect).
package struct NATSOptions: Sendable, Equatable {
    /// TLS towards the servers. Without it, `tls://` URLs still ask for TLS
    /// with the system's trust store.
    package struct TLS: Sendable, Equatable {
        /// PEM file of the certificate authorities to trust; nil: the system's.
        package var caFile: String?
        /// PEM files of this client's certificate and key, for servers that
        /// verify clients.
        package var certificateFile: String?
        package var keyFile: String?
        /// Off unless asked: a test setting, never for production.
        var skipServerVerification = false

        package init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil,
                    skipServerVerification: Bool = false) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.skipServerVerification = skipServerVerification
        }
    }

    /// `nats://host:port` or `tls://host:port`, tried in this order.
    package var servers: [String]
    /// The connection's name, shown by the server's monitoring.
    package var name: String?
    package var user: String?
    package var password: String?
    package var token: String?
    /// A `.creds` file (user JWT and NKey seed), as `nsc` writes them.
    package var credentialsFile: String?
    /// NKey authentication: the user's package key (`U...`), which goes in
    /// the CONNECT, and the file holding its seed (`SU...`), which signs the
    /// server's nonce. Both or neither.
    package var nkeyPublicKey: String?
    package var nkeySeedFile: String?
    package var tls: TLS?
    /// Connect, and wait for the server's answer to a flush, within this.
    package var timeout: Duration = .seconds(2)
    /// Between two attempts to reconnect.
    package var reconnectWait: Duration = .milliseconds(250)
    /// Attempts per server before giving up; nil never gives up (a daemon's
    /// bridge must come back by itself).
    var maxReconnects: Int?
    /// Bytes of publishes kept while reconnecting; past it a publish fails
    /// (`NATS_INSUFFICIENT_BUFFER`) instead of growing memory without
    /// bound. nil: libnats's default, 8 MiB.
    package var reconnectBufferSize: Int?
    /// Also keep trying when the first connection fails: the daemon starts
    /// whether or not NATS is up yet.
    package var retryFirstConnect = true
    /// Write each publish at once instead of letting libnats's flusher
    /// batch them: without it, every hop of a request waits for the flusher
    /// (about 1 ms), which is what an RPC cannot afford.
    var sendImmediately = true
    /// Do not deliver this connection's own publishes back to its own
    /// subscriptions (NATS's `no_echo`).
    package var noEcho = false

    package init(servers: [String]) {
        self.servers = servers
    }

    /// The checks libnats would only make at connect time, with clearer words.
    package func validate() throws(NATSError) {
        let operation = "NATS options"
        guard !servers.isEmpty else { throw .invalid("no server URL", operation) }
        for url in servers {
            if let problem = Self.problem(withURL: url) { throw .invalid(problem, operation) }
        }
        if (user == nil) != (password == nil) { throw .invalid("a user needs a password and a password a user", operation) }
        let methods = [user != nil, token != nil, credentialsFile != nil, nkeySeedFile != nil].filter { $0 }.count
        if methods > 1 { throw .invalid("choose one of user/password, token, credentials file, NKey seed", operation) }
        if (nkeyPublicKey == nil) != (nkeySeedFile == nil) {
            throw .invalid("an NKey needs its package key and its seed file", operation)
        }
        if let tls, (tls.certificateFile == nil) != (tls.keyFile == nil) {
            throw .invalid("a TLS certificate needs its key and a key its certificate", operation)
        }
        if let maxReconnects, maxReconnects < 0 { throw .invalid("max reconnects must be 0 or more", operation) }
        // libnats takes an int; 0 would mean its default, not "no buffer".
        if let reconnectBufferSize, !(1...Int(Int32.max)).contains(reconnectBufferSize) {
            throw .invalid("the reconnect buffer takes 1 to \(Int32.max) bytes", operation)
        }
        for (duration, what) in [(timeout, "timeout"), (reconnectWait, "reconnect wait")] where duration <= .zero {
            throw .invalid("the \(what) must be more than zero", operation)
        }
    }

    /// Server URLs as NATS clients take them (nats.c's `natsOptions_SetURL`):
    /// each value may be a comma-separated list, and the spaces around each
    /// URL do not count. Empty pieces are kept, for ``validate()`` to refuse.
    package static func splitURLs(_ values: [String]) -> [String] {
        values.flatMap { value in
            value.split(separator: ",", omittingEmptySubsequences: false).map { piece in
                var piece = piece
                while piece.first?.isWhitespace == true { piece.removeFirst() }
                while piece.last?.isWhitespace == true { piece.removeLast() }
                return String(piece)
            }
        }
    }

    /// Why `url` is not one server URL (`nats://` or `tls://`, an optional
    /// `user:password@`, a host, an optional port), or nil when it is.
    /// libnats would take some of these and then never connect, silently.
    static func problem(withURL url: String) -> String? {
        let expected = "expected nats://HOST:PORT or tls://HOST:PORT"
        if url.isEmpty { return "an empty server URL (two commas in a row, or one at an end?); \(expected)" }
        if url.contains(",") { return "\(url): one URL per entry (NATSOptions.splitURLs splits a comma list)" }
        guard let scheme = ["nats://", "tls://"].first(where: { url.hasPrefix($0) }) else { return "\(url): \(expected)" }
        var authority = Substring(url.dropFirst(scheme.count))
        // A trailing slash is harmless; a path is not a server.
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.contains(where: { $0 == "/" || $0 == " " || $0 == "\t" }) { return "\(url): \(expected)" }
        var host = authority
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            host = authority[..<colon]
            let port = authority[authority.index(after: colon)...]
            guard let number = Int(port), (1...65535).contains(number) else {
                return "\(url): the port must be a number from 1 to 65535; \(expected)"
            }
        }
        if host.isEmpty || host == "[]" { return "\(url): no host; \(expected)" }
        return nil
    }

    /// A new `natsOptions` with these settings; the caller destroys it.
    /// Callbacks are set by ``NATSConnection``.
    func makeNativeOptions() throws(NATSError) -> OpaquePointer {
        try validate()
        // Every libnats object starts here: libnats is loaded (once) first.
        try LibNATS.load()
        var created: OpaquePointer?
        try check(libnats.natsOptions_Create(&created), "create NATS options")
        guard let options = created else { throw .invalid("natsOptions_Create returned nothing", "create NATS options") }
        do {
            try apply(to: options)
        } catch {
            libnats.natsOptions_Destroy(options)
            throw error
        }
        return options
    }

    private func apply(to options: OpaquePointer) throws(NATSError) {
        var pointers = servers.map { strdup($0) }
        defer { pointers.forEach { free($0) } }
        let status = pointers.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { servers in
                libnats.natsOptions_SetServers(options, servers.baseAddress, Int32(servers.count))
            }
        }
        try check(status, "NATS servers \(servers)")
        try check(libnats.natsOptions_SetNoRandomize(options, true), "NATS server order")
        if let name { try check(libnats.natsOptions_SetName(options, name), "NATS connection name") }
        if let user, let password { try check(libnats.natsOptions_SetUserInfo(options, user, password), "NATS user") }
        if let token { try check(libnats.natsOptions_SetToken(options, token), "NATS token") }
        if let credentialsFile {
            try check(libnats.natsOptions_SetUserCredentialsFromFiles(options, credentialsFile, nil), "NATS credentials \(credentialsFile)")
        }
        if let nkeyPublicKey, let nkeySeedFile {
            try check(libnats.natsOptions_SetNKeyFromSeed(options, nkeyPublicKey, nkeySeedFile), "NATS NKey seed \(nkeySeedFile)")
        }
        if let tls {
            try check(libnats.natsOptions_SetSecure(options, true), "NATS TLS")
            if let caFile = tls.caFile { try check(libnats.natsOptions_LoadCATrustedCertificates(options, caFile), "NATS CA \(caFile)") }
            if let certificate = tls.certificateFile, let key = tls.keyFile {
                try check(libnats.natsOptions_LoadCertificatesChain(options, certificate, key), "NATS certificate \(certificate)")
            }
            if tls.skipServerVerification { try check(libnats.natsOptions_SkipServerVerification(options, true), "NATS TLS verification") }
        }
        try check(libnats.natsOptions_SetTimeout(options, Self.milliseconds(timeout)), "NATS timeout")
        try check(libnats.natsOptions_SetSendAsap(options, sendImmediately), "NATS send at once")
        try check(libnats.natsOptions_SetNoEcho(options, noEcho), "NATS no echo")
        try check(libnats.natsOptions_SetAllowReconnect(options, true), "NATS reconnect")
        try check(libnats.natsOptions_SetMaxReconnect(options, Int32(clamping: maxReconnects ?? -1)), "NATS max reconnects")
        try check(libnats.natsOptions_SetReconnectWait(options, Self.milliseconds(reconnectWait)), "NATS reconnect wait")
        if let reconnectBufferSize {
            try check(libnats.natsOptions_SetReconnectBufSize(options, Int32(clamping: reconnectBufferSize)), "NATS reconnect buffer")
        }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
