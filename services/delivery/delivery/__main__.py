from delivery.main import main

main()
