from sglang_doctor.cli.app import main

if __name__ == "__main__":
    main()
