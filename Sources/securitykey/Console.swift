import CBOR
import FoundationEssentials
import _SecurityKeyInternals
import Transport
import Synchronization

/// Where the tool writes: results on standard output, prompts and diagnostics on standard error.
enum Console {
    /// Writes a line on standard output.
    static func out(_ text: String) {
        FileIO.write(descriptor: FileIO.standardOutput, text + "\n")
    }

    /// Writes a line on standard error.
    static func err(_ text: String) {
        FileIO.write(descriptor: FileIO.standardError, text + "\n")
    }

    /// Prints `value` as pretty JSON on standard output.
    static func json(_ value: JSONValue) {
        out(value.text(pretty: true))
    }

    /// Prints a command's result on standard output: `document` as pretty JSON when `json`
    /// (`--json`), else the line `text`.
    static func result(json: Bool, _ document: @autoclosure () -> JSONValue, _ text: @autoclosure () -> String) {
        if json { self.json(document()) } else { out(text()) }
    }
}

/// Tells the user, once per operation, to touch the key when it waits for presence.
final class TouchPrompt: Sendable {
    private let shown = Atomic<Bool>(false)
    private let message: String

    init(_ message: String = "Touch your security key.") {
        self.message = message
    }

    /// A keepalive observer that prints the prompt on standard error the first time the key
    /// reports that it needs a touch.
    var keepalive: @Sendable (KeepaliveStatus) -> Void {
        { [self] status in
            if status == .userPresenceNeeded,
                !shown.compareExchange(expected: false, desired: true, ordering: .relaxed).original
            {
                Console.err(message)
            }
        }
    }
}

extension Console {
    /// Writes text on standard output with the given terminator.
    static func out(_ text: String, terminator: String) {
        FileIO.write(descriptor: FileIO.standardOutput, text + terminator)
    }
}
