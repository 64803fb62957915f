-- One memory's stored vector (an update that keeps the text keeps it).
SELECT embedding FROM memories WHERE id = $id;
