from telegram_gateway.main import main

main()
