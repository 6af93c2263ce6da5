import Foundation
import SecItem

enum TransferVerbs {
    static let all: [Verb] = []
}
