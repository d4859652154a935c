// What a snapshot's parts must agree on before a broker is rebuilt from
// it: a restored broker must never route to a connection it does not know,
// nor give a new call an id or an instance a number already in use.
extension BrokerSnapshot {
    func checkConsistency() throws(SnapshotError) {
        var connections = Set<ConnectionID>()
        for peer in peers where !connections.insert(peer.connection).inserted {
            throw .inconsistent("connection \(peer.connection) appears twice")
        }
        var instanceNumbers = Set<Int>()
        var callsByInstance: [Int: Int] = [:]
        for call in calls { callsByInstance[call.instance, default: 0] += 1 }
        for target in targets {
            guard !target.instances.isEmpty else { throw .inconsistent("target \"\(target.name)\" has no instance") }
            for instance in target.instances {
                guard connections.contains(instance.connection) else {
                    throw .inconsistent("an instance of \"\(target.name)\" is on connection \(instance.connection), which has no peer")
                }
                guard instanceNumbers.insert(instance.instance).inserted, instance.instance < nextInstance else {
                    throw .inconsistent("instance number \(instance.instance) is used twice or not below next_instance")
                }
                guard instance.inFlight == callsByInstance[instance.instance, default: 0] else {
                    throw .inconsistent("instance \(instance.instance) counts \(instance.inFlight) calls in flight, the calls say otherwise")
                }
            }
        }
        let targetNames = Set(targets.map(\.name))
        guard targetNames.count == targets.count else { throw .inconsistent("a target appears twice") }
        for peer in peers where !peer.targets.isSubset(of: targetNames) {
            throw .inconsistent("connection \(peer.connection) registered a target that is not in the registry")
        }
        var daemonIDs = Set<Int64>()
        for call in calls {
            guard connections.contains(call.caller), connections.contains(call.callee) else {
                throw .inconsistent("call \(call.daemonID) is between connections without a peer")
            }
            guard instanceNumbers.contains(call.instance), targetNames.contains(call.target) else {
                throw .inconsistent("call \(call.daemonID) is on an instance or target not registered")
            }
            guard daemonIDs.insert(call.daemonID).inserted, call.daemonID < nextCallID else {
                throw .inconsistent("call id \(call.daemonID) is used twice or not below next_call_id")
            }
        }
        for component in activation.components {
            for call in component.held where !connections.contains(call.caller) || call.target != component.target {
                throw .inconsistent("a call held for \"\(component.target)\" has no peer or is for another target")
            }
        }
        for waiter in activation.startWaiters where !connections.contains(waiter.connection) {
            throw .inconsistent("a start of \"\(waiter.target)\" waits on connection \(waiter.connection), which has no peer")
        }
        for connection in monitors.keys where !connections.contains(connection) {
            throw .inconsistent("monitor \(connection) has no peer")
        }
    }
}
