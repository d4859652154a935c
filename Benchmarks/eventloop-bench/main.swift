import EventLoopPingPong
import Glibc

// eventloop-bench [--round-trips N] [--runs R] [--driver sd-event|epoll|poll]
// [--peer same|thread]: the cost of one I/O round trip through sd-event
// (MediatorEventLoop) against plain epoll and poll loops; see
// Daemon/EventLoop/README.md. Pin it for stable figures:
// `taskset -c 0 .build/release/eventloop-bench`.

var roundTrips = 100_000
var runs = 5
var drivers = PingPong.Driver.allCases
var peers = PingPong.Peer.allCases

func usage() -> Never {
    print("usage: eventloop-bench [--round-trips N] [--runs R] [--driver sd-event|epoll|poll] [--peer same|thread]")
    exit(2)
}

func required<Value>(_ value: Value?) -> Value {
    guard let value else { usage() }
    return value
}

var arguments = CommandLine.arguments.dropFirst()
while let name = arguments.popFirst() {
    guard let value = arguments.popFirst() else { usage() }
    switch name {
    case "--round-trips": roundTrips = required(Int(value).flatMap { $0 > 0 ? $0 : nil })
    case "--runs": runs = required(Int(value).flatMap { $0 > 0 ? $0 : nil })
    case "--driver": drivers = [required(PingPong.Driver(rawValue: value))]
    case "--peer": peers = [required(["same": PingPong.Peer.sameLoop, "thread": .otherThread][value])]
    default: usage()
    }
}

func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
}

print("round trips per run: \(roundTrips), runs: \(runs); ns per round trip")
print("peer          driver     best     median")
for peer in peers {
    for driver in drivers {
        var figures: [Double] = []
        for _ in 0..<runs {
            do {
                let measurement = try PingPong.measure(driver, peer: peer, roundTrips: roundTrips)
                figures.append(nanoseconds(measurement.perRoundTrip))
            } catch {
                print("\(peer.rawValue) \(driver.rawValue): \(error)")
                exit(1)
            }
        }
        figures.sort()
        let row = [
            peer.rawValue.padded(to: -13),
            driver.rawValue.padded(to: -8),
            String(Int(figures[0])).padded(to: 7),
            String(Int(figures[figures.count / 2])).padded(to: 10),
        ]
        print(row.joined(separator: " "))
    }
}

extension String {
    /// Right-aligned in WIDTH columns; left-aligned in -WIDTH.
    func padded(to width: Int) -> String {
        let fill = String(repeating: " ", count: max(abs(width) - count, 0))
        return width < 0 ? self + fill : fill + self
    }
}
