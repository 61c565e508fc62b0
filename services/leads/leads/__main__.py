from leads.main import main

main()
