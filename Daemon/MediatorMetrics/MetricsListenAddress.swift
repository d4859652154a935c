/// Where `--metrics-listen` serves: a Unix socket, or a loopback TCP
/// address. Anything else is refused: the endpoint has no authentication,
/// and what it shows (targets, uids, refusals) the broker otherwise gives
/// only to peers with the monitor grant.
package enum MetricsListenAddress: Equatable, Sendable, CustomStringConvertible {
    case unixSocket(path: String)
    /// `host` is an IPv4 address in 127.0.0.0/8 or `::1`.
    case tcp(host: String, port: Int)

    package struct Problem: Error, Equatable, CustomStringConvertible {
        package var description: String
    }

    /// `unix:PATH` or a path with a `/` (a Unix socket); `HOST:PORT` with
    /// HOST `localhost`, `127.x.x.x` or `[::1]` (port 0: any free port).
    package init(parsing text: String) throws(Problem) {
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst("unix:".count))
            guard !path.isEmpty else { throw Problem(description: "\"unix:\" needs a socket path after it") }
            self = .unixSocket(path: path)
            return
        }
        if text.contains("/") {
            self = .unixSocket(path: text)
            return
        }
        guard let colon = text.lastIndex(of: ":") else {
            throw Problem(description: "\"\(text)\" is neither a socket path nor HOST:PORT")
        }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        guard !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(portText),
            (0...65535).contains(port)
        else {
            throw Problem(description: "\"\(portText)\" is not a port number (0 to 65535)")
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        switch host {
        case "localhost": host = "127.0.0.1"
        case "::1": break
        default:
            guard Self.isIPv4Loopback(host) else {
                throw Problem(description: "\(host) is not a loopback address: use 127.0.0.1, [::1], localhost or a Unix socket path (the endpoint has no authentication)")
            }
        }
        self = .tcp(host: host, port: port)
    }

    static func isIPv4Loopback(_ host: String) -> Bool {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        let octets = parts.compactMap { part -> Int? in
            guard !part.isEmpty, part.count <= 3, part.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(part).flatMap { $0 <= 255 ? $0 : nil }
        }
        return octets.count == 4 && octets[0] == 127
    }

    package var description: String {
        switch self {
        case .unixSocket(let path): return "unix:\(path)"
        case .tcp(let host, let port): return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        }
    }
}
