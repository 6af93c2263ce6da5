// The Secret Service backend arrives with issue 4.
