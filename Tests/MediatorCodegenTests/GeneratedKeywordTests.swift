import Foundation
import MediatorClient
import MediatorProtocol
import Testing

/// The schema keywords beyond the types in generated Swift (golden Bounds
/// interface): `default` as the member's default.
@Suite struct GeneratedKeywordTests {
    @Test func defaultsFillAbsentMembersInBothForms() throws {
        let text = #"{"query": "q", "version": 2, "page": 1, "ratio": null}"#
        let converted = try SearchParams(jsonValue: try JSONParser.parse(text))
        let decoded = try JSONDecoder().decode(SearchParams.self, from: Data(text.utf8))
        #expect(converted == decoded)
        #expect(converted == SearchParams(page: 1, query: "q", version: 2))
        #expect(converted.limit == 10 && converted.ratio == 0.5 && converted.exact == false)
        #expect(converted.order == .desc && converted.fields == ["title"])
        // Left out: a nullable member's default and an object's.
        #expect(converted.label == nil && converted.filter == nil)
        // Defaulted members are always written.
        let written = converted.jsonValue
        #expect(written["limit"] == 10 && written["order"] == "desc" && written["fields"] == ["title"])
        #expect(written["label"] == nil)
    }
}
