print("secitem")
