import FoundationEssentials
import _SecurityKeyInternals

/// Reads PINs from the terminal without echo, or from standard input (`--pin-stdin`).
/// PINs are never logged nor printed.
struct PINReader: Sendable {
    /// Read PINs from standard input, one per line, instead of the terminal.
    var fromStandardInput: Bool

    /// Reads one PIN (a new one, confirmed on the terminal, when `new`) on a thread of its own:
    /// the read blocks, so never on a cooperative thread. Cancelling the calling task ends a
    /// terminal prompt at once, with the terminal restored, as `cancelled`: a ceremony that ends
    /// elsewhere (its daemon request timed out, Ctrl-C) does not wait for someone to type.
    /// A `--pin-stdin` read cannot be interrupted; it ends with its input.
    func read(_ prompt: String, new: Bool) async -> Result<String, CLIError> {
        let stop = PromptCancellation()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<String, CLIError>, Never>) in
                let started = OSThread.detach(name: "pin prompt") {
                    continuation.resume(
                        returning: Result { () throws(CLIError) in
                            new ? try readNew(prompt, stop: stop) : try read(prompt, stop: stop)
                        })
                }
                if !started {
                    continuation.resume(returning: .failure(CLIError(.failure, code: "io", "Cannot start the PIN prompt.")))
                }
            }
        } onCancel: {
            stop.cancel()
        }
    }

    /// Whether `error` is a prompt ended by cancellation (not by the user or its input).
    static func wasCancelled(_ error: CLIError) -> Bool { error.code == promptCancelled }

    private static let promptCancelled = "cancelled"

    /// Reads one PIN, prompting with `prompt` on the terminal; `stop` ends a terminal prompt.
    func read(_ prompt: String, stop: PromptCancellation? = nil) throws(CLIError) -> String {
        let pin: String?
        if fromStandardInput {
            pin = readLine(strippingNewline: true)
        } else {
            pin = try Self.readFromTerminal(prompt, stop: stop)
        }
        guard let pin, !pin.isEmpty else {
            throw CLIError(
                .pinProblem, code: "pin-missing",
                fromStandardInput ? "No PIN was given on standard input." : "No PIN was entered.")
        }
        return pin
    }

    /// Reads a new PIN: once from standard input, or twice (to confirm) on the terminal.
    func readNew(_ prompt: String, stop: PromptCancellation? = nil) throws(CLIError) -> String {
        let first = try read(prompt, stop: stop)
        if fromStandardInput { return first }
        let second = try read("Repeat the new PIN: ", stop: stop)
        guard first == second else {
            throw CLIError(
                .pinProblem, code: "pin-mismatch", "The two PINs entered differ; nothing was changed.")
        }
        return first
    }

    /// Prompts on /dev/tty and reads a line with echo off, restoring the terminal after.
    private static func readFromTerminal(_ prompt: String, stop: PromptCancellation?) throws(CLIError) -> String? {
        let answer = TerminalPrompt.readSecretLine(prompt, limit: 256, stop: stop) { saved in
            SignalCancellation.terminal.withLock { $0 = saved }
        }
        switch answer {
        case .noTerminal:
            throw CLIError(
                .pinProblem, code: "no-terminal",
                "A PIN is needed but there is no terminal to ask on; pass --pin-stdin and write it to standard input."
            )
        case .cancelled:
            throw CLIError(.cancelled, code: promptCancelled, "The operation ended before a PIN was entered.")
        case .line(var line):
            defer { for i in line.indices { line[i] = 0 } }
            return String(decoding: line, as: UTF8.self)
        }
    }
}
