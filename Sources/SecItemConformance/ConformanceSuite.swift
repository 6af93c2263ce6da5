public import SecItemCore
