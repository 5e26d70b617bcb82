"""The class mode without Streamlit: the store (SQLite or PostgreSQL), rooms and their votes, the report."""
