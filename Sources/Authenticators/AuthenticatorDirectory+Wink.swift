import Transport

extension AuthenticatorDirectory {
    /// Makes every key present blink at once (CTAPHID_WINK; USB HID and UDP), each closed after,
    /// and answers each key's URI with its failure (nil when it blinked), by URI. `denied` is a
    /// permission error met while opening, for the caller to report when no key was found.
    public func winkAll(deadline: Deadline) async
        -> (results: [(uri: String, failure: AuthenticatorError?)], denied: AuthenticatorError?)
    {
        let present = await openAll(deadline: deadline)
        let results = await withTaskGroup(of: (uri: String, failure: AuthenticatorError?).self) { group in
            for key in present.authenticators {
                group.addTask {
                    var failure: AuthenticatorError?
                    do throws(AuthenticatorError) { try await key.wink() } catch { failure = error }
                    await key.close()
                    return (key.uri, failure)
                }
            }
            var results: [(uri: String, failure: AuthenticatorError?)] = []
            for await result in group { results.append(result) }
            return results.sorted { $0.uri < $1.uri }
        }
        return (results, present.denied)
    }
}
