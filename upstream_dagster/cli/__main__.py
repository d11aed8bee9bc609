from upstream_dagster.cli import main

main()
