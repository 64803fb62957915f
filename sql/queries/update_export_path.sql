-- A registered export folder was renamed (its name held an erased identity).
UPDATE exports SET path = $path WHERE id = $id;
