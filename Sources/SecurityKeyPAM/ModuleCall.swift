import CPAM
import Glibc
import PAMSecurityKey
import _SecurityKeyInternals

/// One `pam_sm_authenticate` call: the options and the user's file on the application's
/// thread (the file with the user's identity), then the key search and the assertion on the
/// concurrency runtime's threads while the application's thread serves the conversation.
enum ModuleCall {
    static func authenticate(handle: OpaquePointer, silent: Bool, arguments: [String]) -> PAMResult {
        ModulePinning.keepLoaded()
        let options: PAMModuleOptions
        do throws(PAMFailure) {
            options = try PAMModuleOptions.fromLine(arguments)
        } catch {
            PAMLog(options: PAMModuleOptions()).refusal(error.message)
            return error.result
        }
        let log = PAMLog(options: options)
        let logger = log.logger
        let userName = Conversation.user(handle)
        let authentication: PAMAuthentication
        switch PAMAuthentication.prepare(options: options, userName: userName, log: log) {
        case .finished(let result):
            logger.debug("done", metadata: ["result": "\(result)"])
            return result
        case .authenticate(let prepared): authentication = prepared
        }
        let lost = Result<Void, PAMFailure>.failure(PAMFailure(.authError, "The authentication ended without a result."))
        let outcome = SynchronousCall.run(
            orElse: lost, perform: { (message: Conversation.Message) in Conversation.perform(message, handle: handle, silent: silent) }
        ) { caller in
            await authentication.run(conversation: CallerConversation(caller: caller), logger: logger)
        }
        switch outcome {
        case .success:
            logger.debug("done", metadata: ["result": "\(PAMResult.success)"])
            return .success
        case .failure(let failure):
            if failure.isRefusal { log.refusal(failure.message) }
            logger.debug("done", metadata: ["result": "\(failure.result)", "why": "\(failure.message)"])
            return failure.result
        }
    }
}

/// The conversation as the ceremony sees it: each message carried to the application's thread.
struct CallerConversation: PAMConversation {
    let caller: CallerThread<Conversation.Message, String?>

    func ask(_ prompt: String, echo: Bool) async -> String? {
        await caller.perform(.ask(prompt, echo: echo))
    }

    func tell(_ text: String, isError: Bool) async {
        _ = await caller.perform(.tell(text, isError: isError))
    }
}

/// The application's conversation function and user, on the application's thread.
enum Conversation {
    enum Message: Sendable {
        case ask(String, echo: Bool)
        case tell(String, isError: Bool)
    }

    /// The PAM user (pam_get_user, which may itself ask through the conversation).
    static func user(_ handle: OpaquePointer) -> String? {
        var name: UnsafePointer<CChar>?
        guard pam_get_user(handle, &name, nil) == PAM_SUCCESS, let name else { return nil }
        return String(cString: name)
    }

    /// One message through the application's pam_conv; the typed answer, wiped from the
    /// application's buffer before it is freed. A text message under PAM_SILENT is not shown.
    static func perform(_ message: Message, handle: OpaquePointer, silent: Bool) -> String? {
        let style: Int32
        let text: String
        switch message {
        case .ask(let prompt, let echo): (style, text) = (echo ? PAM_PROMPT_ECHO_ON : PAM_PROMPT_ECHO_OFF, prompt)
        case .tell(let shown, let isError):
            if silent { return nil }
            (style, text) = (isError ? PAM_ERROR_MSG : PAM_TEXT_INFO, shown)
        }
        var item: UnsafeRawPointer?
        guard pam_get_item(handle, PAM_CONV, &item) == PAM_SUCCESS, let item else { return nil }
        let conv = item.assumingMemoryBound(to: pam_conv.self).pointee
        guard let function = conv.conv else { return nil }
        return text.withCString { (cText: UnsafePointer<CChar>) -> String? in
            var pamMessage = pam_message(msg_style: style, msg: cText)
            return withUnsafePointer(to: &pamMessage) { (messagePointer: UnsafePointer<pam_message>) -> String? in
                var messages: UnsafePointer<pam_message>? = messagePointer
                var response: UnsafeMutablePointer<pam_response>?
                let status = function(1, &messages, &response, conv.appdata_ptr)
                guard let response else { return nil }
                defer { free(response) }
                guard let answer = response.pointee.resp else { return nil }
                defer {
                    memset(answer, 0, strlen(answer))
                    free(answer)
                }
                return status == PAM_SUCCESS ? String(cString: answer) : nil
            }
        }
    }
}

/// The module stays loaded once called: the application dlclose()s it at pam_end, while threads
/// of the concurrency runtime may still be finishing in its code (LoadedLibrary).
enum ModulePinning {
    private static let pinned: Void = LoadedLibrary.pin(containing: #dsohandle)

    static func keepLoaded() { pinned }
}
