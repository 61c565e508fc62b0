from ingest.main import main

main()
