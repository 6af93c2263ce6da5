// The file backend arrives with issue 3.
