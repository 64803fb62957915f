DELETE FROM retention_policies WHERE id = $id;
