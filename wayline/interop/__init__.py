"""Optional integrations, each imported only when its library is installed and used."""
