/// The struct members Swift must store out of line: a struct cannot contain
/// itself, even through an optional, so a member whose type leads back to
/// its own struct without passing an array (an array already keeps its
/// elements out of line) is boxed (`Indirect` in the library).
///
/// Those members are the edges inside one strongly connected component of
/// the graph "struct S has a member whose type is struct T" (aliases
/// followed). Tarjan's algorithm, with an explicit stack: a chain of `$ref`s
/// may be as long as the interface, deeper than the call stack allows.
enum RecursiveMembers {
    /// A member, by its struct's name and its JSON name.
    struct Member: Hashable {
        var owner: String
        var jsonName: String
    }

    static func find(in model: InterfaceModel) -> Set<Member> {
        var structs: [StructDecl] = []
        var number: [String: Int] = [:]
        for case .structure(let decl) in model.declarations {
            number[decl.name] = structs.count
            structs.append(decl)
        }
        // For each struct, its members of struct type: (member, struct number).
        let edges: [[(jsonName: String, target: Int)]] = structs.map { decl in
            decl.fields.compactMap { field in
                guard case .named(let name) = model.resolved(field.type).shape, let target = number[name] else { return nil }
                return (field.jsonName, target)
            }
        }
        let component = components(edges.map { $0.map(\.target) })
        var members: Set<Member> = []
        for (source, list) in edges.enumerated() {
            for edge in list where component[edge.target] == component[source] {
                members.insert(Member(owner: structs[source].name, jsonName: edge.jsonName))
            }
        }
        return members
    }

    /// The strongly connected component of each node, as a number.
    static func components(_ edges: [[Int]]) -> [Int] {
        let count = edges.count
        var index = [Int](repeating: -1, count: count)
        var low = [Int](repeating: 0, count: count)
        var onStack = [Bool](repeating: false, count: count)
        var component = [Int](repeating: -1, count: count)
        var stack: [Int] = []
        var counter = 0
        var components = 0
        func visit(_ node: Int) {
            index[node] = counter
            low[node] = counter
            counter += 1
            stack.append(node)
            onStack[node] = true
        }
        for root in 0..<count where index[root] < 0 {
            visit(root)
            // Each frame: a node and the next of its edges to follow.
            var frames: [(node: Int, next: Int)] = [(root, 0)]
            while let (node, next) = frames.last {
                if next < edges[node].count {
                    frames[frames.count - 1].next += 1
                    let target = edges[node][next]
                    if index[target] < 0 {
                        visit(target)
                        frames.append((target, 0))
                    } else if onStack[target] {
                        low[node] = min(low[node], index[target])
                    }
                    continue
                }
                frames.removeLast()
                if let parent = frames.last?.node { low[parent] = min(low[parent], low[node]) }
                guard low[node] == index[node] else { continue }
                while let member = stack.popLast() {
                    onStack[member] = false
                    component[member] = components
                    if member == node { break }
                }
                components += 1
            }
        }
        return component
    }
}
