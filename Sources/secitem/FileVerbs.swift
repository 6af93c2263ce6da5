import Foundation
import SecItem

enum FileVerbs {
    static let all: [Verb] = []
}
