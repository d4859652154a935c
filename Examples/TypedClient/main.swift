// example-typed-client: a typed Swift client of the Weather component.
//
//   .build/debug/example-typed-client [--socket PATH] [--target NAME] [--city NAME] [--days N] [--from N]
//
// WeatherClient, ForecastParams, ForecastResult, Day and the other types
// are generated at build time from Weather.mediator.json (a symlink to the
// component's own file, Examples/SwiftComponent/Weather.mediator.json) by
// the MediatorGenerator plugin: no target, action or member name is typed
// as a string here. It calls `forecast` and prints each day, then streams
// `countdown` and prints each partial, and exits 0; on an error it prints
// "example-typed-client: CODE: MESSAGE" on stderr and exits 1. --target
// calls another instance of the same interface. The socket: --socket, else
// $MEDIATOR_SOCKET, else $XDG_RUNTIME_DIR/mediator/mediator.sock, else
// /run/mediator/mediator.sock.
import Foundation
import MediatorClient
import MediatorProtocol

struct Options {
    var socket: String?
    var target = WeatherClient.target
    var city = "Oslo"
    var days = 3
    var from = 3

    static let usage =
        "usage: example-typed-client [--socket PATH] [--target NAME] [--city NAME] [--days N] [--from N]\n"

    init(_ arguments: [String]) {
        var words = arguments.makeIterator()
        func value(_ option: String) -> String {
            guard let value = words.next() else { Self.fail("\(option) needs a value") }
            return value
        }
        func number(_ option: String) -> Int {
            let text = value(option)
            guard let number = Int(text) else { Self.fail("\(option): expected an integer, got \(text)") }
            return number
        }
        while let word = words.next() {
            switch word {
            case "--socket": socket = value(word)
            case "--target": target = value(word)
            case "--city": city = value(word)
            case "--days": days = number(word)
            case "--from": from = number(word)
            case "-h", "--help":
                FileHandle.standardOutput.write(Data(Self.usage.utf8))
                exit(0)
            default: Self.fail("unknown argument \(word)")
            }
        }
        guard NameRules.isValidTarget(target) else { Self.fail("invalid target name \(target)") }
    }

    /// The socket per the examples' rule (see Examples/README.md).
    var socketPath: String {
        if let socket { return socket }
        let environment = ProcessInfo.processInfo.environment
        // The user instance where there is one, else the system's.
        return (try? ProtocolConstants.socketPath(explicit: nil, environment: environment, userInstance: true))
            ?? ProtocolConstants.socketPath(explicit: nil, environment: environment)
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("example-typed-client: \(message)\n\(usage)".utf8))
        exit(2)
    }
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let options = Options(Array(CommandLine.arguments.dropFirst()))

do {
    let connection = try await MediatorClient.connect(socketPath: options.socketPath, name: "example-typed-client")
    let weather = WeatherClient(connection, target: options.target)

    // A plain call: typed params in, a typed result out.
    let forecast: ForecastResult = try await weather.forecast(ForecastParams(city: options.city, days: options.days))
    say("forecast for \(forecast.city): \(forecast.days.count) days")
    for day in forecast.days {
        say("day \(day.day): \(day.summary), high \(day.high), low \(day.low), precipitation \(day.precipitation)%")
    }

    // A stream: each partial as it comes, then the final answer. Its
    // values are free-form (integers, then {"done": true}): see the interface.
    var counted: [String] = []
    for try await value in weather.countdown(CountdownParams(from: options.from, intervalMs: 10)) {
        if let count = value.intValue {
            counted.append(String(count))
        } else if value["done"]?.boolValue == true {
            counted.append("done")
        }
    }
    say("countdown: \(counted.joined(separator: " "))")
    await connection.close()
    exit(0)
} catch {
    FileHandle.standardError.write(Data("example-typed-client: \(error)\n".utf8))
    exit(1)
}
