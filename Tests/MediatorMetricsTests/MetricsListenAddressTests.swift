import MediatorMetrics
import Testing

@Suite("--metrics-listen addresses")
struct MetricsListenAddressTests {
    @Test("Unix socket paths and loopback addresses are taken", arguments: [
        ("/run/mediator/metrics.sock", MetricsListenAddress.unixSocket(path: "/run/mediator/metrics.sock")),
        ("unix:metrics.sock", .unixSocket(path: "metrics.sock")),
        ("./metrics.sock", .unixSocket(path: "./metrics.sock")),
        ("127.0.0.1:9464", .tcp(host: "127.0.0.1", port: 9464)),
        ("127.1.2.3:0", .tcp(host: "127.1.2.3", port: 0)),
        ("localhost:9464", .tcp(host: "127.0.0.1", port: 9464)),
        ("[::1]:9464", .tcp(host: "::1", port: 9464)),
        ("::1:9464", .tcp(host: "::1", port: 9464)),
    ])
    func accepted(_ text: String, _ expected: MetricsListenAddress) throws {
        #expect(try MetricsListenAddress(parsing: text) == expected)
    }

    @Test("Anything else is refused with a reason", arguments: [
        "", "unix:", "9464", "0.0.0.0:9464", "192.168.1.10:9464", "[::]:9464", "example.com:80", "127.0.0.1:",
        "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:+80", "127.0.0:80", "127.0.0.256:80", "127.0.0.1.5:80",
        "localhost:http", "128.0.0.1:80", "127.0.0.01234:80",
    ])
    func refused(_ text: String) {
        #expect(throws: MetricsListenAddress.Problem.self) { try MetricsListenAddress(parsing: text) }
    }

    @Test("The description is what one would type back")
    func descriptions() throws {
        #expect(try MetricsListenAddress(parsing: "[::1]:9").description == "[::1]:9")
        #expect(try MetricsListenAddress(parsing: "localhost:9").description == "127.0.0.1:9")
        #expect(try MetricsListenAddress(parsing: "/a/b").description == "unix:/a/b")
    }
}
