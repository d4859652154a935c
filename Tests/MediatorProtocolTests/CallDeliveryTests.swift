import Testing

@testable import MediatorProtocol

/// `data.delivered` on errors: whether a failed call reached a component.
@Suite("Call delivery on errors")
struct CallDeliveryTests {
    @Test func readsTrueFalseAndAnythingElseAsUnknown() {
        #expect(MediatorError(.timeout, "", data: ["delivered": true]).delivered == .yes)
        #expect(MediatorError(.overloaded, "", data: ["quota": "q", "delivered": false]).delivered == .no)
        for data: JSONValue? in [nil, ["delivered": .null], [:], ["delivered": 1], [false], "no"] {
            #expect(MediatorError(.timeout, "", data: data).delivered == .unknown, "\(String(describing: data))")
        }
    }

    @Test func setsTheMemberBesideWhatDataHolds() {
        let plain = MediatorError(.targetNotFound, "none").delivered(.no)
        #expect(plain.data == ["delivered": false])
        let quota = MediatorError(.overloaded, "full", data: ["quota": "q"]).delivered(.yes)
        #expect(quota.data == ["quota": "q", "delivered": true])
        #expect(quota.delivered(.unknown).data == ["quota": "q", "delivered": .null])
        #expect(quota.delivered(.unknown).json["data"]?["delivered"] == .null)
        // Data that is not an object is a component's own: left as it is.
        let list = MediatorError(.init("busy"), "later", data: [1, 2])
        #expect(list.delivered(.no) == list)
        #expect(list.delivered == .unknown)
    }
}
