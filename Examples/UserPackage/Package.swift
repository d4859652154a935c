// swift-tools-version:6.0
// A package of your own that uses Mediator, as you would write it: copy this
// folder, put your Mediator repository's URL below, and `swift build`.
//
// SwiftPM names a dependency by the last component of its URL (or of its
// folder, for `.package(path:)`), lowercased and without ".git": here
// "mediator". That name, not the `name:` in Mediator's own Package.swift, is
// what `package:` takes below.
//
// Tests/scripts/user-package-test.sh builds this package against a tagged
// clone of the repository, exactly as SwiftPM resolves a version for a user.
import PackageDescription

let package = Package(
    name: "hello-mediator",
    dependencies: [
        .package(url: "https://git.example.org/mediator.git", from: "0.1.0")
    ],
    targets: [
        .executableTarget(
            name: "hello",
            dependencies: [.product(name: "MediatorClient", package: "mediator")],
            // Hello.mediator.json in Sources/hello becomes Swift types at build time.
            plugins: [.plugin(name: "MediatorGenerator", package: "mediator")]
        ),
        // `swift test` needs no mediatord: MediatorTesting runs the daemon's
        // broker inside the test process (see Tests/helloTests).
        .testTarget(
            name: "helloTests",
            dependencies: [
                "hello",
                .product(name: "MediatorClient", package: "mediator"),
                .product(name: "MediatorTesting", package: "mediator"),
            ]
        ),
    ]
)
