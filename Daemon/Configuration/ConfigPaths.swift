// FoundationEssentials, not Foundation: the daemon needs no ICU data
// (tens of MiB of mapped memory, docs/benchmark.md "Footprint").
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where the config folders are: one place for the names and for the user
/// instance's `$XDG_CONFIG_HOME`, which manifests and policy files share.
enum ConfigPaths {
    /// The folder of component manifests, in each config root.
    static let componentsFolder = "components.d"
    /// The folder of policy files, in each config root.
    static let policyFolder = "policy.d"

    /// `$XDG_CONFIG_HOME/mediator/FOLDER` of the user instance, where an
    /// unset, empty or relative `XDG_CONFIG_HOME` means `$HOME/.config`
    /// (the XDG Base Directory rule), and an unset `HOME` the account's home.
    static func userFolder(_ folder: String, environment: [String: String]) -> String {
        let configHome: String
        if let value = environment["XDG_CONFIG_HOME"], value.hasPrefix("/") {
            configHome = value
        } else {
            let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 }
                ?? FileManager.default.homeDirectoryForCurrentUser.path
            configHome = join(home, ".config")
        }
        return join(configHome, "mediator/" + folder)
    }

    /// `directory/name`, without doubling a trailing slash.
    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
