import Foundation
import MediatorClient
import MediatorProtocol
import Testing

/// The schema keywords beyond the types in generated Swift (golden Bounds
/// interface): `default` as the member's default; the bounds and `const`
/// checked as the daemon checks them, on decoding and by `validate()`.
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

    static let validSearch = #"{"query": "q", "version": 2, "page": 0}"#

    /// Each out of bounds in one member of `validSearch`, and the error's path.
    static let outOfBounds: [(text: String, path: [String])] = [
        (#"{"query": "", "version": 2, "page": 0}"#, ["query"]),
        (#"{"query": "q", "version": 3, "page": 0}"#, ["version"]),
        (#"{"query": "q", "version": 2, "page": -1}"#, ["page"]),
        (#"{"query": "q", "version": 2, "page": 0, "limit": 101}"#, ["limit"]),
        (#"{"query": "q", "version": 2, "page": 0, "ratio": 1}"#, ["ratio"]),
        (#"{"query": "q", "version": 2, "page": 0, "ratio": 0}"#, ["ratio"]),
        (#"{"query": "q", "version": 2, "page": 0, "fields": []}"#, ["fields"]),
        (#"{"query": "q", "version": 2, "page": 0, "fields": ["a", "b", "c", "d", "e"]}"#, ["fields"]),
        (#"{"query": "q", "version": 2, "page": 0, "fields": ["a", "12345678901234567"]}"#, ["fields", "1"]),
    ]

    @Test func boundsAreCheckedOnDecodingInBothForms() throws {
        #expect(try SearchParams(jsonValue: try JSONParser.parse(Self.validSearch)).version == 2)
        // `const` compares numbers by value: 2.0 is 2.
        #expect(try SearchParams(jsonValue: try JSONParser.parse(#"{"query": "q", "version": 2.0, "page": 0}"#)).version == 2)
        for (text, path) in Self.outOfBounds {
            #expect(throws: JSONConversionError.self, "\(text)") { try SearchParams(jsonValue: try JSONParser.parse(text)) }
            let json = try JSONParser.parse(text)
            do {
                _ = try SearchParams(jsonValue: json)
            } catch {
                #expect(error.path == path, "\(text): \(error)")
            }
            #expect(throws: (any Error).self, "\(text)") {
                try JSONDecoder().decode(SearchParams.self, from: Data(text.utf8))
            }
        }
    }

    @Test func lengthsCountCodePoints() throws {
        // 33 characters of 2 code points each (thumb and skin tone): 66 code points, over 64.
        let long = SearchParams(page: 0, query: String(repeating: "👍🏽", count: 33), version: 2)
        #expect(long.query.count == 33)
        #expect(throws: JSONConversionError.self) { try long.validate() }
        let fits = SearchParams(page: 0, query: String(repeating: "👍🏽", count: 32), version: 2)
        try fits.validate()
    }

    @Test func validateChecksNestedStructsAndSaysWhere() throws {
        let result = SearchResult(hits: [Hit(score: 0.5, title: "a"), Hit(score: 2, title: "b")])
        do {
            try result.validate()
            Issue.record("a score of 2 passed")
        } catch {
            #expect(error.path == ["hits", "1", "score"])
            #expect(error.description == "hits.1.score: expected at most 1, found 2")
        }
        let text = #"{"hits": [{"score": 0.5, "title": "a"}, {"score": 2, "title": "b"}]}"#
        #expect(throws: JSONConversionError.self) { try SearchResult(jsonValue: try JSONParser.parse(text)) }
    }

    @Test func paramsOutOfBoundsAreInvalidParamsBeforeSending() throws {
        let params = SearchParams(limit: 0, page: 0, query: "q", version: 2)
        do {
            _ = try JSONConversion.validatedParams(params)
            Issue.record("limit 0 passed")
        } catch {
            #expect(error.code == .invalidParams)
            #expect(error.message.contains("limit: expected at least 1, found 0"), "\(error.message)")
        }
        #expect(try JSONConversion.validatedParams(SearchParams(page: 0, query: "q", version: 2)).limit == 10)
    }
}
