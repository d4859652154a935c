// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Mediator",
    // Linux only (Unix sockets with SO_PEERCRED, systemd, /proc): no
    // `platforms:` entry claims otherwise.
    products: [
        .library(name: "MediatorProtocol", targets: ["MediatorProtocol"]),
        .library(name: "MediatorClient", targets: ["MediatorClient"]),
        .library(name: "MediatorTesting", targets: ["MediatorTesting"]),
        .executable(name: "mediatord", targets: ["mediatord"]),
        .executable(name: "mediatorctl", targets: ["mediatorctl"]),
        .library(name: "MediatorCodegen", targets: ["MediatorCodegen"]),
        .executable(name: "mediator-generate", targets: ["mediator-generate"]),
        .plugin(name: "MediatorGenerator", targets: ["MediatorGenerator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // `swift package generate-documentation` (scripts/check-docs): the DocC
        // catalogs of MediatorClient and MediatorProtocol. A plugin only; no
        // target depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
    ],
    targets: [
        // Wire types, framing, names, URLs, schemas: no dependencies, no I/O.
        .target(name: "MediatorProtocol", path: "Protocol"),

        // The NIO pieces that the daemon and the client share: line framing.
        .target(
            name: "MediatorTransport",
            dependencies: ["MediatorProtocol", .product(name: "NIOCore", package: "swift-nio")],
            path: "Transport"
        ),
        // Unix stream sockets that pass descriptors (SCM_RIGHTS), which
        // SwiftNIO cannot (issue 26): recvmsg/sendmsg, line framing with
        // descriptors, an outbound queue. No NIO, no event loop: the caller
        // says when a socket is ready. MediatorProtocol for its LineFramer.
        .target(name: "MediatorSocket", dependencies: ["MediatorProtocol"], path: "Socket", exclude: ["README.md"]),
        // What the broker counts (issue 12): counters, histograms, the
        // slow-call log and their JSON; pure, no clock, no I/O.
        .target(name: "MediatorStatistics", dependencies: ["MediatorProtocol"], path: "Daemon/MediatorStatistics"),
        // Component manifests and policy files: their folders, reading and
        // checking them. Reads files, no NIO, so that a tool can check files
        // with the daemon's own parsers.
        .target(
            name: "MediatorConfiguration",
            dependencies: ["MediatorProtocol", "MediatorInterface"],
            path: "Daemon/Configuration"
        ),
        .target(
            name: "MediatorDaemon",
            dependencies: DaemonLibrary.dependencies,
            path: "Daemon/MediatorDaemon",
            exclude: ["README.md"],
            // The broker's state lives in classes confined to one event loop;
            // release builds skip the run-time exclusivity checks on it
            // (about 7,000 instructions of 65,000 per routed call, measured
            // with Benchmarks/profile-mediatord). Debug builds, which the
            // tests run, keep them, so an overlapping access still fails there.
            // -disable-type-layout: without it the copies and destroys of
            // other modules' enums held in memory (`MessageID?`,
            // `JSONValue?`, an `Envelope`'s id) go through their value
            // witnesses, some 100 instructions each and a dozen per call;
            // with it they are inlined (docs/benchmark.md).
            swiftSettings: [
                .unsafeFlags(["-enforce-exclusivity=unchecked", "-Xfrontend", "-disable-type-layout"], .when(configuration: .release))
            ]
        ),
        // The same sources (Daemon/MediatorEmbeddedDaemon is a symlink to
        // Daemon/MediatorDaemon) as a module without that unsafe flag, for
        // MediatorTesting to run inside a user's tests: SwiftPM refuses a
        // product with unsafe flags as a versioned dependency, and marking
        // the broker's properties @exclusivity(unchecked) instead left
        // mediatord 2.2% slower (NIO's inlined ByteBuffer code keeps its
        // checks). Exclusivity stays checked here, as in debug builds.
        .target(
            name: "MediatorEmbeddedDaemon",
            dependencies: DaemonLibrary.dependencies,
            path: "Daemon/MediatorEmbeddedDaemon",
            exclude: ["README.md"]
        ),
        // libsystemd, and the thin layer over it that only mediatord uses:
        // the broker core knows nothing of systemd.
        .systemLibrary(
            name: "CSystemd", path: "Daemon/CSystemd", pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        .target(
            name: "MediatorSystemd",
            dependencies: ["CSystemd", .product(name: "Logging", package: "swift-log")],
            path: "Daemon/Systemd"
        ),
        // sd-event with Swift closures as handlers: the loop that owns the
        // daemon's sockets, which carry descriptors (issue 26); SwiftNIO
        // cannot pass them.
        .target(
            name: "MediatorEventLoop",
            dependencies: ["CSystemd"],
            path: "Daemon/EventLoop",
            exclude: ["README.md"]
        ),
        // Line-framed connections that pass descriptors, on sd-event: the
        // socket layer of the daemon's coming host (issue 26); not used by
        // mediatord yet.
        .target(
            name: "MediatorSocketHost",
            // CSystemd for epoll (ConnectionEpoll), which Glibc's module lacks.
            dependencies: ["MediatorSocket", "MediatorEventLoop", "CSystemd"],
            path: "Daemon/SocketHost"
        ),
        // `mediatord --metrics-listen`: the Prometheus text format over
        // HTTP/1, built from the broker's statistics; a layer of its own, so
        // the broker core knows nothing of HTTP.
        .target(
            name: "MediatorMetrics",
            dependencies: [
                "MediatorStatistics",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Daemon/MediatorMetrics"
        ),
        .executableTarget(
            name: "mediatord",
            dependencies: [
                "MediatorConfiguration",
                "MediatorDaemon",
                "MediatorMetrics",
                "MediatorSystemd",
                "MediatorNATSBridge",
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Daemon/mediatord"
        ),
        .target(
            name: "MediatorClient",
            dependencies: [
                "MediatorProtocol",
                // The connection's socket I/O: recvmsg/sendmsg, so that
                // descriptors travel with calls and answers (issue 26).
                "MediatorSocket",
                // Only TimeAmount and NIODeadline (PendingCalls) and the
                // locks: the library does no I/O through NIO any more.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                // Trace context: inject on calls, extract in components (issue 12).
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                // Component is a Service: it runs in a ServiceGroup and drains on graceful shutdown.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Client/MediatorClient"
        ),
        // The daemon inside a test process (issue 27): a component's tests
        // call it through the real protocol and the broker's own checks,
        // without mediatord.
        .target(
            name: "MediatorTesting",
            dependencies: [
                "MediatorClient",
                "MediatorConfiguration",
                "MediatorEmbeddedDaemon",
                "MediatorProtocol",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Client/MediatorTesting"
        ),
        // Interface files (issue 11): reading, checking and comparing them.
        // Pure: the caller gives file names and bytes.
        .target(name: "MediatorInterface", dependencies: ["MediatorProtocol"], path: "Client/MediatorInterface"),
        // Interface files to Swift and Python source: pure logic, no I/O.
        // Generates only what `interface check` accepts, through MediatorInterface.
        .target(name: "MediatorCodegen", dependencies: ["MediatorInterface", "MediatorProtocol"], path: "Client/MediatorCodegen"),
        // The generator as a small tool of its own, for the build-tool plugin.
        .executableTarget(
            name: "mediator-generate",
            dependencies: ["MediatorCodegen", "MediatorProtocol"],
            path: "Client/mediator-generate"
        ),
        // Generates Swift for every `*.mediator.json` in a target's sources.
        .plugin(
            name: "MediatorGenerator",
            capability: .buildTool(),
            dependencies: ["mediator-generate"],
            path: "Client/Plugins/MediatorGenerator"
        ),
        .executableTarget(
            name: "mediatorctl",
            dependencies: [
                "MediatorClient",
                "MediatorConfiguration",
                "MediatorInterface",
                "MediatorCodegen",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // --traceparent: an instrument that propagates a given context.
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ],
            path: "Client/mediatorctl"
        ),
        // The examples use the MediatorGenerator plugin as a user would:
        // their Swift types come from Weather.mediator.json at build time.
        .executableTarget(
            name: "example-component",
            dependencies: ["MediatorClient"],
            path: "Examples/SwiftComponent",
            plugins: [.plugin(name: "MediatorGenerator")]
        ),
        // A typed client of Weather; its Weather.mediator.json is a symlink to the component's.
        .executableTarget(
            name: "example-typed-client",
            dependencies: ["MediatorClient"],
            path: "Examples/TypedClient",
            plugins: [.plugin(name: "MediatorGenerator")]
        ),
        // A typed Swift client of the Python Notes component: one interface
        // file serves a Python service and a Swift caller. (A target of its
        // own: generated types of two interfaces would share one module.)
        .executableTarget(
            name: "example-typed-notes-client",
            dependencies: ["MediatorClient"],
            path: "Examples/TypedNotesClient",
            plugins: [.plugin(name: "MediatorGenerator")]
        ),
        // Starting, tending and measuring child processes, and the roles of
        // a tool that starts itself again: what mediator-bench and
        // mediator-chaos share.
        .target(
            name: "ChildProcesses",
            dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Tests/Support/ChildProcesses"
        ),
        .executableTarget(
            name: "mediator-bench",
            // The raw roles use POSIX sockets on purpose (no library cost in
            // their figures); the library roles use MediatorClient.
            dependencies: [
                "ChildProcesses",
                "MediatorClient",
                "MediatorProtocol",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/mediator-bench",
            // The typed column's params and result, generated as a user's are.
            plugins: [.plugin(name: "MediatorGenerator")]
        ),
        // One I/O round trip through sd-event against plain epoll and poll
        // loops (issue 26, Daemon/EventLoop/README.md): the measurement, and
        // the tool that prints it.
        .target(name: "EventLoopPingPong", dependencies: ["MediatorEventLoop", "CSystemd"], path: "Benchmarks/EventLoopPingPong"),
        .executableTarget(name: "eventloop-bench", dependencies: ["EventLoopPingPong"], path: "Benchmarks/eventloop-bench"),
        // The chaos run of issue 5: kills components at random under load and
        // checks every call got exactly one answer. Run by run-tests.
        .executableTarget(
            name: "mediator-chaos",
            dependencies: [
                "ChildProcesses",
                "MediatorClient",
                "MediatorProtocol",
                "MediatorSocket",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tests/Chaos",
            exclude: ["README.md", "fds_component.py"]
        ),

        // Trace context across processes (issue 12): an in-memory tracer
        // that propagates W3C traceparent, and the probe the integration
        // test runs as component and as client.
        .target(
            name: "TraceTesting",
            dependencies: [
                "MediatorProtocol",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            path: "Tests/Support/TraceTesting"
        ),
        .executableTarget(
            name: "mediator-trace-probe",
            dependencies: [
                "MediatorClient", "MediatorProtocol", "TraceTesting",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            path: "Tests/Support/TraceProbe"
        ),

        // libnats (the official NATS C client), and the thin layer over it
        // that the mediatord NATS bridge uses (issue 14): the broker core
        // knows nothing of NATS.
        .systemLibrary(
            // Headers only: libnats itself is loaded with dlopen when NATS is used (Daemon/CNats/shim.h).
            name: "CNats", path: "Daemon/CNats",
            providers: [.apt(["libnats-dev"])]
        ),
        .target(
            name: "MediatorNATS",
            dependencies: ["CNats", .product(name: "Logging", package: "swift-log")],
            path: "Daemon/NATS"
        ),
        // The bridge itself: a client of its own daemon that exports and
        // imports targets over NATS (docs/scale-out.md).
        .target(
            name: "MediatorNATSBridge",
            dependencies: [
                "MediatorNATS", "MediatorClient", "MediatorProtocol",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Daemon/NATSBridge"
        ),

        .testTarget(name: "MediatorProtocolTests", dependencies: ["MediatorProtocol"], path: "Tests/MediatorProtocolTests"),
        // Descriptor-leak counting and socket helpers the socket tests share.
        .target(
            name: "SocketTesting", dependencies: ["MediatorSocket"],
            path: "Tests/Support/SocketTesting"
        ),
        .testTarget(name: "MediatorSocketTests", dependencies: ["MediatorSocket", "SocketTesting"], path: "Tests/MediatorSocketTests"),
        .testTarget(
            name: "MediatorEventLoopTests", dependencies: ["MediatorEventLoop", "EventLoopPingPong"],
            path: "Tests/MediatorEventLoopTests"
        ),
        .testTarget(
            name: "MediatorSocketHostTests", dependencies: ["MediatorSocketHost", "MediatorSocket", "MediatorEventLoop", "SocketTesting"],
            path: "Tests/MediatorSocketHostTests"
        ),
        .testTarget(name: "MediatorNATSTests", dependencies: ["MediatorNATS", "MediatorNATSBridge", "MediatorProtocol"], path: "Tests/MediatorNATSTests"),
        .testTarget(
            name: "MediatorStatisticsTests",
            dependencies: ["MediatorStatistics", "MediatorProtocol"],
            path: "Tests/MediatorStatisticsTests"
        ),
        .testTarget(
            name: "MediatorMetricsTests",
            dependencies: [
                "MediatorMetrics", "MediatorStatistics",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            path: "Tests/MediatorMetricsTests"
        ),
        .testTarget(
            name: "MediatorInterfaceTests",
            dependencies: ["MediatorInterface", "MediatorProtocol"],
            path: "Tests/MediatorInterfaceTests"
        ),
        .testTarget(
            name: "MediatorConfigurationTests",
            dependencies: ["MediatorConfiguration", "MediatorProtocol"],
            path: "Tests/MediatorConfigurationTests"
        ),
        .testTarget(
            name: "MediatorDaemonTests",
            dependencies: [
                "MediatorConfiguration",
                "MediatorDaemon",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                "MediatorProtocol",
                "MediatorTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            path: "Tests/MediatorDaemonTests"
        ),
        .testTarget(
            name: "MediatorClientTests",
            dependencies: [
                "MediatorClient",
                "MediatorProtocol",
                // The descriptor tests' fake daemon, and their leak counting.
                "MediatorSocket", "SocketTesting",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                "MediatorTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "TraceTesting",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            path: "Tests/MediatorClientTests"
        ),
        .testTarget(
            name: "MediatorctlTests",
            dependencies: [
                "mediatorctl", "MediatorProtocol", "MediatorClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tests/MediatorctlTests"
        ),
        // Golden files of the generators; the golden Swift files compile as
        // part of this target (the JSON and Python ones are read at run time).
        .testTarget(
            name: "MediatorCodegenTests",
            dependencies: ["MediatorCodegen", "MediatorClient", "MediatorInterface", "MediatorProtocol"],
            path: "Tests/MediatorCodegenTests",
            exclude: GoldenFiles.excluded
        ),
        // Uses the MediatorGenerator plugin as a user would: proof that its
        // output compiles and works.
        .testTarget(
            name: "GeneratedInterfaceTests",
            dependencies: ["MediatorClient", "MediatorProtocol", "MediatorTesting", "SocketTesting"],
            path: "Tests/GeneratedInterfaceTests",
            plugins: [.plugin(name: "MediatorGenerator")]
        ),
        // The harness, and the Weather example's own code tested through it
        // as a component's author would (example-component is imported).
        .testTarget(
            name: "MediatorTestingTests",
            dependencies: ["MediatorTesting", "MediatorClient", "MediatorProtocol", "example-component"],
            path: "Tests/MediatorTestingTests"
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "MediatorClient", "MediatorInterface", "MediatorProtocol",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/IntegrationTests"
        ),
    ]
)

/// The golden interface files and Python outputs, kept out of the Swift
/// sources of MediatorCodegenTests (the test finds them by #filePath).
enum GoldenFiles {
    static let names = ["Notes", "Shapes", "Keywords", "Streams", "Recursive", "Bounds", "Alternatives", "Descriptors"]
    static let excluded: [String] =
        names.flatMap { ["Golden/\($0).mediator.json", "Golden/\($0.lowercased()).py"] } + ["PythonCheck"]
}

/// What the daemon library (MediatorDaemon, and MediatorEmbeddedDaemon built
/// from the same sources) depends on.
enum DaemonLibrary {
    static let dependencies: [Target.Dependency] = [
        "MediatorProtocol",
        // The daemon's sockets (recvmsg/sendmsg, descriptors) on sd-event (issue 26).
        "MediatorSocket",
        "MediatorEventLoop",
        "MediatorSocketHost",
        "MediatorStatistics",
        "MediatorConfiguration",
        "MediatorTransport",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "Subprocess", package: "swift-subprocess"),
        .product(name: "SystemPackage", package: "swift-system"),
        // Call latencies go to swift-metrics as they happen, only when an
        // exporter asked for them (mediatord --metrics-listen).
        .product(name: "CoreMetrics", package: "swift-metrics"),
    ]
}
