import Foundation
import SecItem

enum DiagnoseVerb {
    static let verb = Verb("diagnose", summary: "Say which backend is used and why.", synopsis: "", options: []) {
        (session: Session) throws(CommandError) in
    }
}
