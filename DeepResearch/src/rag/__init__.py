"""Local documents: loading, chunking, lexical search and the FAISS vector store."""
