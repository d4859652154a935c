import MediatorConfiguration
import MediatorProtocol
import NIOCore

// The manifests as they are (re)loaded, and the at-boot components started
// by priority group.
extension ComponentActivation {
    /// Installs the manifests at start, or replaces them on reload: new ones
    /// become activatable, changed ones apply from their next start, removed
    /// ones stop once their calls finish.
    mutating func loadManifests(_ manifests: [Manifest], now: NIODeadline, registry: Registry) -> [Action] {
        let incoming = Dictionary(manifests.map { ($0.target, $0) }, uniquingKeysWith: { first, _ in first })
        for (target, manifest) in incoming {
            if components[target] != nil {
                components[target]?.manifest = manifest
                components[target]?.removed = false
            } else {
                components[target] = ManagedComponent(manifest: manifest)
            }
        }
        for target in components.keys where incoming[target] == nil {
            components[target]?.removed = true
            if components[target]?.state == .activatable || components[target]?.state == .failed {
                components[target] = nil
            }
        }
        var actions: [Action] = [.manifestsLoaded(count: incoming.count)]
        scheduleWakeUp(now, registry, &actions)
        return actions
    }

    /// Starts the at-boot components, lowest priority first; each priority
    /// group starts once the one before has registered or failed.
    mutating func startBootComponents(now: NIODeadline, registry: Registry) -> [Action] {
        let boot = components.values.filter { $0.manifest.start == .atBoot && !$0.removed }
        let priorities = Set(boot.map(\.manifest.priority)).sorted()
        bootGroups = priorities.map { priority in boot.filter { $0.manifest.priority == priority }.map(\.manifest.target).sorted() }
        var actions: [Action] = []
        startNextBootGroup(now, registry, &actions)
        return actions
    }

    private mutating func startNextBootGroup(_ now: NIODeadline, _ registry: Registry, _ actions: inout [Action]) {
        while bootWaiting.isEmpty {
            guard !bootGroups.isEmpty else {
                if !bootDone {
                    bootDone = true
                    actions.append(.bootComplete)
                }
                return
            }
            let group = bootGroups.removeFirst()
            for target in group where components[target]?.state == .activatable {
                actions.append(.bootStarting(target))
                bootWaiting.insert(target)
                start(target, now, registry, &actions)
            }
        }
    }

    mutating func bootSettled(_ target: String, _ now: NIODeadline, _ registry: Registry, _ actions: inout [Action]) {
        guard bootWaiting.remove(target) != nil else { return }
        if bootWaiting.isEmpty { startNextBootGroup(now, registry, &actions) }
    }
}
