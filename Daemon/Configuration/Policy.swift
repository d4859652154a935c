import MediatorProtocol

/// What a peer asks to do, checked against the policy.
package enum PolicyRequest: Sendable, Equatable, CustomStringConvertible {
    /// Registering (or joining the pool of) a target.
    case register(target: String)
    /// A call; also used for `open`, as the call the URL reaches.
    case call(target: String, action: String)
    /// A subscription, with the pattern asked for (`user.login`, `user.*`, `*`).
    case subscribe(pattern: String)
    /// Publishing one event.
    case publish(event: String)
    /// Attaching a monitor.
    case monitor
    /// A call that carries file descriptors (contract section 8) to
    /// `target`, checked besides the call itself.
    case sendDescriptors(target: String)

    /// The request as a denial names it: `register "Notes"`, `call "Notes/add"`,
    /// `subscribe to "user.*"`, `publish "user.login"`, `monitor`,
    /// `send file descriptors to "Notes"`.
    package var description: String {
        switch self {
        case .register(let target): return "register \(Policy.quoted(target))"
        case .call(let target, let action): return "call \(Policy.quoted(target + "/" + action))"
        case .subscribe(let pattern): return "subscribe to \(Policy.quoted(pattern))"
        case .publish(let event): return "publish \(Policy.quoted(event))"
        case .monitor: return "monitor"
        case .sendDescriptors(let target): return "send file descriptors to \(Policy.quoted(target))"
        }
    }
}

/// Who asks: the peer's credentials as the kernel gave them.
package struct PolicySubject: Sendable, Equatable, CustomStringConvertible {
    package var uid: UInt32
    /// The primary group.
    package var gid: UInt32
    /// The primary and supplementary groups (SO_PEERGROUPS). The primary
    /// group counts even when it is missing here.
    package var groups: [UInt32]
    /// The user's name, looked up once when the connection was accepted;
    /// only used in denial messages.
    package var userName: String?
    /// Set for a caller on another host (through the NATS bridge): then
    /// `uid` is that host's, information only, and only rules about remote
    /// callers match.
    package var remoteHost: String?

    package init(uid: UInt32, gid: UInt32, groups: [UInt32], userName: String? = nil, remoteHost: String? = nil) {
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.userName = userName
        self.remoteHost = remoteHost
    }

    /// A caller on `host`, as that host's bridge reported it.
    package static func remote(host: String, uid: UInt32) -> PolicySubject {
        PolicySubject(uid: uid, gid: uid, groups: [], remoteHost: host)
    }

    /// Whether the subject holds group `gid`, as its primary or a supplementary group.
    func isMember(of gid: UInt32) -> Bool {
        self.gid == gid || groups.contains(gid)
    }

    /// `uid 1000 (alice)`, or `uid 1000` without a name.
    package var description: String {
        if let remoteHost { return "uid \(uid) on host \(Policy.quoted(remoteHost))" }
        if let userName { return "uid \(uid) (\(userName))" }
        return "uid \(uid)"
    }
}

/// Who may do what: rules that grant, read from JSON files (docs/policy.md).
///
/// Rules only ever grant, and add up: a request is allowed when any rule
/// that matches the subject allows it. uid 0 may do anything. Checking is
/// pure and does no I/O: names were resolved when the policy was read.
package struct Policy: Sendable, Equatable {
    /// Whom a rule is about. Every condition given must hold; none means everyone.
    package struct Match: Sendable, Equatable {
        /// The subject's uid must be this (from `uid`, or `user` resolved).
        package var uid: UInt32?
        /// The subject must hold each of these groups, as its primary or a
        /// supplementary group (from `gid`, and `group` resolved).
        var gids: [UInt32]

        /// `"remote": true`: callers on other hosts (through the NATS
        /// bridge); `false` or absent: local callers only.
        package var remote: Bool
        /// `"host"`: callers on that host (implies `remote`).
        package var host: String?

        package init(uid: UInt32? = nil, gids: [UInt32] = [], remote: Bool = false, host: String? = nil) {
            self.uid = uid
            self.gids = gids
            self.remote = remote || host != nil
            self.host = host
        }

        /// `{}`: every local subject.
        package static let everyone = Match()

        package func matches(_ subject: PolicySubject) -> Bool {
            // A remote caller's uid and groups are not local credentials:
            // only rules about remote callers (and their host) apply to it.
            if let remoteHost = subject.remoteHost {
                guard remote, uid == nil, gids.isEmpty else { return false }
                return host.map { $0 == remoteHost } ?? true
            }
            if remote { return false }
            if let uid, subject.uid != uid { return false }
            for gid in gids where !subject.isMember(of: gid) { return false }
            return true
        }
    }

    /// What a rule grants.
    package struct Allow: Sendable, Equatable {
        /// Targets that may be registered.
        package var register: [Pattern]
        /// Calls that may be made (and URLs opened).
        package var call: [CallPattern]
        /// Patterns that cover what may be subscribed to.
        package var subscribe: [Pattern]
        /// Events that may be published.
        package var publish: [Pattern]
        /// Whether a monitor may be attached.
        package var monitor: Bool
        /// Targets that calls carrying file descriptors may go to (`send_fds`);
        /// the call itself needs its `call` grant too.
        package var sendDescriptors: [Pattern]

        package init(
            register: [Pattern] = [], call: [CallPattern] = [], subscribe: [Pattern] = [], publish: [Pattern] = [],
            monitor: Bool = false, sendDescriptors: [Pattern] = []
        ) {
            self.register = register
            self.call = call
            self.subscribe = subscribe
            self.publish = publish
            self.monitor = monitor
            self.sendDescriptors = sendDescriptors
        }

        /// Everything: `*` everywhere, the daemon's administrative actions and `monitor`.
        package static let everything = Allow(
            register: [.any], call: [.any, CallPattern(target: .exact(ProtocolConstants.daemonTarget), action: .any)],
            subscribe: [.any], publish: [.any], monitor: true, sendDescriptors: [.any])

        /// Whether this grants `request`.
        package func grants(_ request: PolicyRequest) -> Bool {
            switch request {
            case .register(let target):
                return register.contains { $0.matches(target) }
            case .call(let target, let action):
                // Stopping someone else's service is an administrator's
                // right: only a pattern that names the target `mediator`
                // grants it, never `*/*`.
                if target == ProtocolConstants.daemonTarget, Policy.administrativeDaemonActions.contains(action) {
                    return call.contains { $0.target != .any && $0.matches(target: target, action: action) }
                }
                return call.contains { $0.matches(target: target, action: action) }
            case .subscribe(let pattern):
                // A pattern that is not valid is taken as one literal name:
                // only `*` covers it.
                let asked = Pattern(pattern, kind: .event) ?? .exact(pattern)
                return subscribe.contains { $0.covers(asked) }
            case .publish(let event):
                return publish.contains { $0.matches(event) }
            case .monitor:
                return monitor
            case .sendDescriptors(let target):
                return sendDescriptors.contains { $0.matches(target) }
            }
        }
    }

    /// One grant: the subjects it is about and what they may do.
    package struct Rule: Sendable, Equatable {
        package var match: Match
        package var allow: Allow

        package init(match: Match = .everyone, allow: Allow) {
            self.match = match
            self.allow = allow
        }
    }

    /// The rules, in file order. They add up: the order does not change the outcome.
    package var rules: [Rule]
    /// Whether this is the default policy, in force because no policy file
    /// was found at all. A policy file that is empty, or whose every rule was
    /// refused, is still a policy: the default does not come back.
    package var isDefault: Bool
    /// Rules that were left out while reading, each with why: a user or
    /// group name that did not resolve. The rest of the file applies.
    var skippedRules: [PolicyProblem]

    package init(rules: [Rule], isDefault: Bool = false, skippedRules: [PolicyProblem] = []) {
        self.rules = rules
        self.isDefault = isDefault
        self.skippedRules = skippedRules
    }

    /// The actions of the daemon's own target that anyone may call whatever
    /// the policy: they only read, or act on the caller's own calls,
    /// subscriptions and registrations. `register`, `subscribe`, `publish`
    /// and `open` are checked as the request they make, not as calls; the
    /// others (`start`, `stop`, and any added later) are calls like any
    /// other, `mediator/stop` in a rule.
    /// The daemon's actions that act on other peers' components (`start`,
    /// `stop`): granted only by a call pattern whose target is `mediator`
    /// itself (`mediator/stop`, `mediator/*`), so that neither the default
    /// policy's nor a file's `*/*` lets any user stop another's service.
    /// `reexec` replaces the daemon's image: the same right.
    static let administrativeDaemonActions: Set<String> = ["start", "stop", "reexec"]

    static let openDaemonActions: Set<String> = [
        "hello", "ping", "list", "describe", "status", "cancel", "unregister", "unsubscribe",
    ]

    /// The policy without any policy file: the daemon's own uid (and root)
    /// may do anything; everyone else may call, subscribe and publish, but
    /// not register, monitor, or start and stop managed components. (Events under `mediator.` are the daemon's
    /// own: the broker refuses to let anyone publish them.) Whoever may call
    /// may pass file descriptors with the call, as on D-Bus: a descriptor is
    /// one more argument, opened by the sender with its own rights.
    package static func defaultPolicy(daemonUID: UInt32) -> Policy {
        Policy(
            rules: [
                Rule(match: Match(uid: daemonUID), allow: .everything),
                Rule(match: .everyone, allow: Allow(call: [.any], subscribe: [.any], publish: [.any], sendDescriptors: [.any])),
                // What the administrator exported may be called from other hosts
                // (a sealed memfd crosses the bridge as bytes and arrives as a new one).
                Rule(match: Match(remote: true), allow: Allow(call: [.any], sendDescriptors: [.any])),
            ],
            isDefault: true)
    }

    /// The rules of several files, one after the other; skipped rules too.
    /// The result is the default only when every part is (and there is one).
    package static func merged(_ policies: [Policy]) -> Policy {
        Policy(
            rules: policies.flatMap(\.rules),
            isDefault: !policies.isEmpty && policies.allSatisfy(\.isDefault),
            skippedRules: policies.flatMap(\.skippedRules))
    }

    /// Whether `subject` may make `request`: uid 0 always may, as may
    /// anyone call one of the ``openDaemonActions``; otherwise some rule
    /// that matches the subject must grant it.
    package func allows(_ request: PolicyRequest, by subject: PolicySubject) -> Bool {
        // Local root; a remote uid 0 is only information.
        if subject.uid == 0 && subject.remoteHost == nil { return true }
        if case .call(let target, let action) = request, target == ProtocolConstants.daemonTarget,
            Self.openDaemonActions.contains(action)
        {
            return true
        }
        for rule in rules where rule.match.matches(subject) && rule.allow.grants(request) {
            return true
        }
        return false
    }

    /// nil when allowed, else the denial, naming the subject and what was
    /// denied: `uid 1000 (alice) may not register "Notes"`.
    package func check(_ request: PolicyRequest, by subject: PolicySubject) -> String? {
        allows(request, by: subject) ? nil : "\(subject) may not \(request)"
    }

    static func quoted(_ text: String) -> String { JSONValue.string(text).jsonText }
}
