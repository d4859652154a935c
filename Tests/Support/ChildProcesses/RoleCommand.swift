import ArgumentParser

extension AsyncParsableCommand {
    /// Parses the command line and runs the chosen role, sync or async.
    /// `main()` spelled out: in top-level code both `main()` and `run()`
    /// resolve to ParsableCommand's synchronous ones, which do not run async
    /// commands; inside an async function the async ones win.
    public static func runChosenRole() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
