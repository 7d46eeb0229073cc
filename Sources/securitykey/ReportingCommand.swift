import ArgumentParser

/// A subcommand whose failures become one sentence on standard error (and a JSON error object
/// on standard output under `--json`) and a documented exit status.
protocol ReportingCommand: AsyncParsableCommand {
    /// Whether the user asked for JSON.
    var wantsJSON: Bool { get }
    /// The command's work.
    func execute() async throws
}

extension ReportingCommand {
    mutating func run() async throws {
        do {
            try await execute()
        } catch let exit as ExitCode {
            throw exit
        } catch {
            let failure = CLIError.from(error)
            Console.err("securitykey: \(failure.message)")
            if wantsJSON {
                Console.json(
                    .object([
                        (
                            "error",
                            .object([("code", .string(failure.code)), ("message", .string(failure.message))])
                        )
                    ]))
            }
            throw ExitCode(failure.status.rawValue)
        }
    }
}
