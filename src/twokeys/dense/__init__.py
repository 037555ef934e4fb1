"""Dense (embedding) retrieval: encoders and vector search."""
