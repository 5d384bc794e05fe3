"""Components for the local-mode integration tests. Each writes what it saw to
`test.output_dir` in `cleanup()`, which also proves cleanup runs before exit."""
