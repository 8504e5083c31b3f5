package command

// LinkedForTests is set by TestMain (main_test.go, package command_test:
// it may import cli/migrate, which imports this package) to what
// openclaw-migrate links, so that the in-process tests walking the whole
// tree (TestJSONConvention) reach migrate's real command too.
var LinkedForTests Linked
