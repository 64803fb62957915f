-- Hybrid retrieval: candidates from three channels, every candidate scored on every signal, fused.
-- The reference implementation: search() runs the same formula in NumPy over small statements
-- (memstore/retrieval/fusion.py, candidates.py); tests/test_search_golden.py keeps the two equal.
-- Ties at a channel's candidate_k cut are broken by id, as in fusion.py.
--
-- Inputs: /*WHERE*/ = compiled filters AND visibility (alias m); /*POSTING_SCOPE*/ = the identity
--   equalities on postings (alias p); {dim} = the store's vector width. The query comes as list
--   parameters (registering Arrow tables cost ~1.7 ms per search):
--   $qvec                      the query vector
--   $qterms                    the query's keyword lemmas (distinct, one per query word)
--   $qforms, $qform_terms      every form whose postings count, and the term of $qterms it counts for
--   $qent_ids, $qent_match     entities found in the query, with match strength in [0,1]
-- Parameters: $candidate_k, $k1, $b, $hub_damping, $w_sem, $w_kw, $w_ent, $w_rec, $half_life_days, $conv_lambda, $nb_window,
--   $now, $use_sem, $use_kw, $use_ent, $qslot, $w_slot, $w_person, $qtext, $w_ep, $episode_minutes,
--   $w_time, $qtime_start, $qtime_end (epoch seconds), $qtime_months, $time_half_life_days, $limit,
--   $fb_k, $fb_beta, $fb_coherence.
--
-- Every signal is in [0, 1] and the fused score is a weighted mean with a FIXED denominator
-- (w_sem + w_kw + w_ent + w_rec + w_slot + w_person + w_ep + w_time): a memory's score never depends
-- on which other candidates happened to have signals (mem0 divides by the number of signals present).
--   semantic = max(cosine, 0), the cosine of the query q with v + $conv_lambda * c: the memory's unit
--              vector v and the mean unit vector c of its conversation (the scope's memories stored
--              by the same add() call): document expansion from the conversation a fact was told in.
--              From per-row values: (q.v + l q.c) / sqrt(1 + 2 l v.c + l^2 |c|^2), q.c the
--              conversation's mean cosine, |c|^2 its mean v.c. A memory alone in its add() call
--              (facts added one by one) is read with its neighbours instead: c is the mean unit vector
--              of the memories alone in theirs within $nb_window places of it in the order said
--              (valid_at, then id; itself included, fewer at either end and never across a pause of
--              more than $episode_minutes), and |c|^2 the mean of v.v' over the window's pairs. $conv_lambda = 0 turns both off, $nb_window = 0 the neighbours;
--              a scope with a single such memory leaves it its own cosine.
--   keyword  = min(1, sum over the query terms a memory matches of min(the term's BM25 part, its idf)
--              / sum over query terms of idf) — the share of the query's idf the memory matches: 1.0
--              only when it matches every query term (a part reaches the idf at tf 1 and average
--              length); a short memory, or one repeating a word, cannot stand in for the words it
--              lacks. The keyword channel ranks by the whole BM25; statistics over the filtered scope.
--              It counts in the fused score times semantic (when that counts: channel on, $w_sem > 0): a
--              keyword match lifts a fact in proportion to how well it means the query, so words
--              shared with a weakly related fact do not push the fact that answers down
--   entity   = noisy-or over the query's matched entities of match * weight, where weight is the
--              entity's idf within the scope scaled to 1 at degree 1 (an entity linked to most of
--              the scope's memories lifts them by almost nothing), times mem0's optional
--              1 / (1 + hub_damping * (degree - 1)^2)
--   recency  = exp(-ln 2 * age_days / half_life_days) (weight 0 by default)
--   slot     = 1 when the query asks about an attribute ("where does X live" -> lives_in) and the
--              memory states that attribute; $w_slot is 0 for queries that ask about none, so the
--              denominator depends on the query only, never on the other candidates
--   person   = 1 when the query names the person the memory is attributed to (attributed_to, as a
--              whole word of $qtext: the query lowercased, words separated by single spaces, padded)
--   episode  = 1 when the memory was learned in the same conversation as the best candidate by the
--              other signals (the anchor): stored by the same add() call (extraction_run_id: the
--              messages the caller handed over together), or, when both have a stated time
--              (valid_from given by a timestamp, not the storage time: valid_from <> created_at),
--              said within $episode_minutes of the anchor. Storage times say nothing about when
--              something was said (sessions imported one after another are seconds apart), so
--              memories without a stated time group by add() call only. A memory added alone
--              (facts stored one by one) has the conversation its smoothing reads: when the anchor
--              is one, the memories added alone within $nb_window places of it in the order said
--              (the same run: no pause of more than $episode_minutes) are its episode too. Facts
--              from the best match's conversation come along (pseudo-relevance feedback on the
--              conversation; the value depends on the best candidate, the denominator still does not)
--   time     = for a query that names periods (memstore/retrieval/query_time.py: a day, a month of a
--              year, a year: [$qtime_start, $qtime_end); a month without a year: $qtime_months, that
--              month of the memory's year, the year before and after): exp(-ln 2 * days between the
--              memory's time and the nearest period / $time_half_life_days), 1 inside one; 0 and
--              $w_time = 0 for a query that names none (like slot). It counts before the episode anchor.
-- Feedback (pseudo-relevance, Rocchio): when the first pass's best $fb_k results agree (mean pairwise
-- cosine >= $fb_coherence), a second pass reads the semantic signal (and its candidates) from
-- q + $fb_beta m, m their mean unit vector: cosine (q.v + beta m.v) / |q + beta m|, smoothed as above;
-- every other signal is the first pass's. When they do not agree, the first pass is the answer.
WITH scope AS MATERIALIZED (
    -- one scan of the scope's memories serves every channel (the cosine only when semantic is on)
    SELECT m.id, m.doc_len, m.created_at, m.valid_from, coalesce(m.valid_from, m.created_at) AS valid_at,
           epoch_us(coalesce(m.valid_from, m.created_at)) // 1000000 AS t, split_part(m.slot, ':', 1) AS slot_family,
           m.extraction_run_id AS episode_key, coalesce(m.valid_from <> m.created_at, false) AS time_stated,
           CASE WHEN m.attributed_to IS NOT NULL AND contains($qtext, ' ' || lower(trim(m.attributed_to)) || ' ')
                THEN 1.0::DOUBLE ELSE 0.0::DOUBLE END AS person,
           CASE WHEN $use_sem THEN array_cosine_similarity(m.embedding, $qvec::FLOAT[{dim}]) END AS cosine,
           CASE WHEN $use_sem THEN m.embedding END AS embedding
    FROM memories m
    WHERE /*WHERE*/
),
conv_dot AS (
    -- v . c per memory: its unit vector times the mean unit vector of its conversation (same add() call)
    SELECT a.id, avg(array_cosine_similarity(a.embedding, b.embedding)) AS conv_dot
    FROM scope a JOIN scope b ON a.episode_key = b.episode_key
    WHERE $use_sem
    GROUP BY a.id
),
conv AS (
    -- per conversation: q . c (its mean cosine) and |c|^2 (its mean v . c)
    SELECT s.episode_key, avg(s.cosine) AS q_dot_c, avg(d.conv_dot) AS c_sq
    FROM scope s JOIN conv_dot d ON d.id = s.id
    GROUP BY s.episode_key
),
alone_said AS (
    -- the memories alone in their add() call, numbered in the order said; a pause of more than
    -- $episode_minutes since the one before starts a new run
    SELECT s.id, s.cosine, s.embedding, row_number() OVER (ORDER BY s.valid_at, s.id) AS pos,
           CASE WHEN date_diff('microsecond', lag(s.valid_at) OVER (ORDER BY s.valid_at, s.id), s.valid_at)
                     > $episode_minutes * 60000000 THEN 1 ELSE 0 END AS pause
    FROM scope s
    LEFT JOIN (SELECT episode_key, count(*) AS n FROM scope WHERE episode_key IS NOT NULL GROUP BY episode_key) g
      ON g.episode_key = s.episode_key
    WHERE $use_sem AND $nb_window > 0 AND coalesce(g.n, 1) = 1
),
alone AS (
    SELECT *, sum(pause) OVER (ORDER BY pos) AS run FROM alone_said
),
alone_placed AS (
    -- their places for the episode: none when only one memory is alone (no window, as for the smoothing)
    SELECT id, pos, run FROM alone WHERE (SELECT count(*) FROM alone) > 1
),
nb_pairs AS (
    -- each of them with those within $nb_window places in its run (itself included)
    SELECT a.id, a.embedding AS own, b.id AS bid, b.cosine, b.embedding
    FROM alone a JOIN alone b ON b.run = a.run AND b.pos BETWEEN a.pos - $nb_window AND a.pos + $nb_window
    WHERE (SELECT count(*) FROM alone) > 1
),
nb AS (
    -- q . c (the window's mean cosine), v . c, and |c|^2 (the mean v . v' over the window's pairs)
    SELECT p.id, avg(p.cosine) AS q_dot_c, avg(array_cosine_similarity(p.own, p.embedding)) AS v_dot_c,
           (SELECT avg(array_cosine_similarity(x.embedding, y.embedding))
            FROM nb_pairs x JOIN nb_pairs y ON x.id = y.id WHERE x.id = p.id) AS c_sq
    FROM nb_pairs p
    GROUP BY p.id
),
sem AS (
    SELECT s.id, CASE WHEN $conv_lambda > 0 AND n.id IS NOT NULL
                      THEN ((s.cosine + $conv_lambda * n.q_dot_c)
                            / sqrt(greatest(1 + 2 * $conv_lambda * n.v_dot_c + $conv_lambda * $conv_lambda * n.c_sq,
                                            1e-12)))::FLOAT
                      WHEN $conv_lambda > 0 AND c.episode_key IS NOT NULL
                      THEN ((s.cosine + $conv_lambda * c.q_dot_c)
                            / sqrt(greatest(1 + 2 * $conv_lambda * d.conv_dot + $conv_lambda * $conv_lambda * c.c_sq,
                                            1e-12)))::FLOAT
                      ELSE s.cosine END AS cosine
    FROM scope s
    LEFT JOIN conv_dot d ON d.id = s.id
    LEFT JOIN conv c ON c.episode_key = s.episode_key
    LEFT JOIN nb n ON n.id = s.id
    WHERE $use_sem
),
sem_top AS (
    SELECT id FROM sem ORDER BY cosine DESC, id LIMIT $candidate_k
),
stats AS (
    SELECT count(*)::DOUBLE AS n, greatest(coalesce(avg(doc_len), 1), 1)::DOUBLE AS avgdl FROM scope
),
hits AS MATERIALIZED (
    -- each form's postings count for its query term ($qform_terms), one row per memory and term
    SELECT p.memory_id AS id, $qform_terms[list_position($qforms, p.term)] AS term, sum(p.tf) AS tf,
           any_value(s.doc_len) AS doc_len
    FROM keyword_postings p
    JOIN scope s ON s.id = p.memory_id
    -- identity columns on the postings (lets DuckDB skip other users' rows), then the query's forms
    WHERE /*POSTING_SCOPE*/ AND list_contains($qforms, p.term)
    GROUP BY ALL
),
idf AS (
    -- a query term absent from the scope keeps the highest idf, so matching only common words scores low
    SELECT qt.term, ln(1 + (stats.n - coalesce(d.df, 0) + 0.5) / (coalesce(d.df, 0) + 0.5)) AS idf
    FROM (SELECT unnest($qterms::VARCHAR[]) AS term) qt CROSS JOIN stats
    LEFT JOIN (SELECT term, count(*) AS df FROM hits GROUP BY term) d ON d.term = qt.term
),
bm25_parts AS (
    SELECT h.id, i.idf, i.idf * h.tf * ($k1 + 1) / (h.tf + $k1 * (1 - $b + $b * h.doc_len / stats.avgdl)) AS part
    FROM hits h JOIN idf i ON i.term = h.term CROSS JOIN stats
),
bm25 AS (
    -- matched: each term's part up to its idf (what the keyword signal reads)
    SELECT id, sum(part) AS bm25, sum(least(part, idf)) AS matched FROM bm25_parts GROUP BY id
),
kw AS (
    SELECT b.id, b.bm25, least(1.0, b.matched / greatest((SELECT sum(idf) FROM idf), 1e-9)) AS keyword
    FROM bm25 b
),
kw_top AS (
    SELECT id FROM kw WHERE $use_kw ORDER BY bm25 DESC, id LIMIT $candidate_k
),
ent_hits AS MATERIALIZED (
    SELECT p.memory_id AS id, p.entity_id, qe.match
    FROM entity_postings p
    JOIN (SELECT unnest($qent_ids::VARCHAR[]) AS entity_id, unnest($qent_match::DOUBLE[]) AS match) qe
      ON qe.entity_id = p.entity_id
    JOIN scope s ON s.id = p.memory_id
    WHERE /*POSTING_SCOPE*/ AND list_contains($qent_ids, p.entity_id)
),
degree AS (
    SELECT entity_id, count(*) AS deg FROM ent_hits GROUP BY entity_id
),
ent_weight AS (
    -- hub damping: an entity's weight falls with its degree in the scope like an idf, scaled so an
    -- entity of degree 1 weighs 1 (and optionally mem0's 1 / (1 + hub_damping * (degree - 1)^2))
    SELECT d.entity_id,
           ln(1 + (stats.n - d.deg + 0.5) / (d.deg + 0.5)) / ln(1 + (greatest(stats.n, 1) - 0.5) / 1.5)
           / (1 + $hub_damping * power(d.deg - 1, 2)) AS weight
    FROM degree d CROSS JOIN stats
),
ent AS (
    SELECT e.id,
           1 - exp(sum(ln(greatest(1e-12, 1 - least(1.0, e.match * w.weight))))) AS entity,
           count(*) AS n_entities
    FROM ent_hits e JOIN ent_weight w USING (entity_id)
    GROUP BY e.id
),
ent_top AS (
    SELECT id FROM ent WHERE $use_ent AND entity > 0 ORDER BY entity DESC, id LIMIT $candidate_k
),
candidates AS (
    SELECT id, bool_or(ch = 'semantic') AS by_semantic, bool_or(ch = 'keyword') AS by_keyword,
           bool_or(ch = 'entity') AS by_entity
    FROM (
        SELECT id, 'semantic' AS ch FROM sem_top
        UNION ALL SELECT id, 'keyword' FROM kw_top
        UNION ALL SELECT id, 'entity' FROM ent_top
    )
    GROUP BY id
),
sig AS (
    -- the signals that do not read the query vector, for every scope row (both passes read them)
    SELECT s.id, coalesce(kw.keyword, 0) AS keyword, coalesce(kw.bm25, 0) AS bm25,
           coalesce(ent.entity, 0) AS entity, coalesce(ent.n_entities, 0) AS n_entities,
           exp(-ln(2) * greatest(date_diff('second', s.valid_at, $now), 0)
               / 86400.0 / $half_life_days) AS recency,
           CASE WHEN $qslot IS NOT NULL AND s.slot_family = $qslot THEN 1.0::DOUBLE ELSE 0.0::DOUBLE END AS slot,
           s.person,
           greatest(
               coalesce(list_max(list_transform(list_zip($qtime_start::BIGINT[], $qtime_end::BIGINT[]),
                   p -> exp(-ln(2) * greatest(p[1] - s.t, s.t - p[2], 0) / 86400.0 / $time_half_life_days))), 0),
               coalesce(list_max(list_transform($qtime_months::INTEGER[], mo -> list_max(list_transform([-1, 0, 1],
                   dy -> exp(-ln(2) * greatest(
                       epoch(make_timestamp(year(s.valid_at) + dy, mo, 1, 0, 0, 0))::BIGINT - s.t,
                       s.t - epoch(make_timestamp(year(s.valid_at) + dy, mo, 1, 0, 0, 0) + INTERVAL 1 MONTH)::BIGINT,
                       0) / 86400.0 / $time_half_life_days))))), 0))::DOUBLE AS time,
           s.valid_at, s.episode_key, s.time_stated, al.pos AS nb_pos, al.run AS nb_run
    FROM scope s
    LEFT JOIN alone_placed al ON al.id = s.id
    LEFT JOIN kw ON kw.id = s.id
    LEFT JOIN ent ON ent.id = s.id
),
scored AS (
    SELECT c.id, c.by_semantic, c.by_keyword, c.by_entity, greatest(coalesce(sem.cosine, 0), 0) AS semantic,
           g.* EXCLUDE (id)
    FROM candidates c
    JOIN sig g ON g.id = c.id
    LEFT JOIN sem ON sem.id = c.id
),
base AS (
    SELECT *, $w_sem * semantic + $w_kw * keyword * CASE WHEN $use_sem AND $w_sem > 0 THEN semantic ELSE 1 END + $w_ent * entity + $w_rec * recency + $w_slot * slot
              + $w_person * person + $w_time * time AS base_sum
    FROM scored
),
anchor AS (
    -- the best candidate before the episode signal: its time marks the episode
    SELECT valid_at AS anchor_at, episode_key AS anchor_key, time_stated AS anchor_stated, nb_pos AS anchor_pos,
           nb_run AS anchor_run
    FROM base ORDER BY base_sum DESC, id LIMIT 1
),
episodic AS (
    SELECT b.* EXCLUDE (base_sum, valid_at, episode_key, time_stated, time, nb_pos, nb_run), b.base_sum,
           CASE WHEN b.episode_key = a.anchor_key
                  OR (b.time_stated AND a.anchor_stated
                      AND abs(date_diff('second', b.valid_at, a.anchor_at)) <= $episode_minutes * 60)
                  -- the anchor added alone: the memories added alone within its neighbour window
                  OR (b.nb_run = a.anchor_run AND abs(b.nb_pos - a.anchor_pos) <= $nb_window)
                THEN 1.0::DOUBLE ELSE 0.0::DOUBLE END AS episode,
           b.time
    FROM base b CROSS JOIN anchor a
),
pass1 AS (
    SELECT * EXCLUDE (base_sum),
           (base_sum + $w_ep * episode)
           / ($w_sem + $w_kw + $w_ent + $w_rec + $w_slot + $w_person + $w_ep + $w_time) AS score
    FROM episodic
),
fb AS (
    -- feedback: the first pass's best $fb_k
    SELECT p.id, s.embedding, s.cosine FROM pass1 p JOIN scope s ON s.id = p.id
    WHERE $use_sem ORDER BY p.score DESC, p.id LIMIT $fb_k
),
fb_gate AS (
    -- a second pass only when they agree (mean pairwise cosine >= $fb_coherence); |q + beta m| with
    -- m their mean unit vector: 1 + 2 beta q.m + beta^2 |m|^2, |m|^2 the mean over all their pairs
    SELECT (SELECT count(*) FROM fb) >= 2 AND $fb_beta > 0
           AND coalesce(avg(CASE WHEN a.id <> b.id THEN array_cosine_similarity(a.embedding, b.embedding) END)
                        >= $fb_coherence, false) AS go,
           sqrt(greatest(1 + 2 * $fb_beta * (SELECT avg(cosine) FROM fb)
                         + $fb_beta * $fb_beta * avg(array_cosine_similarity(a.embedding, b.embedding)), 1e-12)) AS norm
    FROM fb a CROSS JOIN fb b
),
fb_cos AS (
    -- every scope row's cosine with q + $fb_beta m (q a unit vector): (q.v + beta m.v) / |q + beta m|
    SELECT s.id, s.episode_key,
           ((s.cosine + $fb_beta * avg(array_cosine_similarity(s.embedding, f.embedding))) / any_value(g.norm))::FLOAT
               AS cosine
    FROM scope s CROSS JOIN fb f CROSS JOIN fb_gate g
    WHERE g.go
    GROUP BY s.id, s.episode_key, s.cosine
),
conv2 AS (
    SELECT episode_key, avg(cosine) AS q_dot_c FROM fb_cos GROUP BY episode_key
),
nb2 AS (
    SELECT p.id, avg(f.cosine) AS q_dot_c FROM nb_pairs p JOIN fb_cos f ON f.id = p.bid GROUP BY p.id
),
sem2 AS (
    -- the smoothing of sem on the feedback cosine
    SELECT s.id, CASE WHEN $conv_lambda > 0 AND n.id IS NOT NULL
                      THEN ((s.cosine + $conv_lambda * n2.q_dot_c)
                            / sqrt(greatest(1 + 2 * $conv_lambda * n.v_dot_c + $conv_lambda * $conv_lambda * n.c_sq,
                                            1e-12)))::FLOAT
                      WHEN $conv_lambda > 0 AND c.episode_key IS NOT NULL
                      THEN ((s.cosine + $conv_lambda * c2.q_dot_c)
                            / sqrt(greatest(1 + 2 * $conv_lambda * d.conv_dot + $conv_lambda * $conv_lambda * c.c_sq,
                                            1e-12)))::FLOAT
                      ELSE s.cosine END AS cosine
    FROM fb_cos s
    LEFT JOIN conv_dot d ON d.id = s.id
    LEFT JOIN conv c ON c.episode_key = s.episode_key
    LEFT JOIN conv2 c2 ON c2.episode_key = s.episode_key
    LEFT JOIN nb n ON n.id = s.id
    LEFT JOIN nb2 n2 ON n2.id = s.id
),
sem2_top AS (
    SELECT id FROM sem2 ORDER BY cosine DESC, id LIMIT $candidate_k
),
candidates2 AS (
    SELECT id, bool_or(ch = 'semantic') AS by_semantic, bool_or(ch = 'keyword') AS by_keyword,
           bool_or(ch = 'entity') AS by_entity
    FROM (
        SELECT id, 'semantic' AS ch FROM sem2_top
        UNION ALL SELECT id, 'keyword' FROM kw_top
        UNION ALL SELECT id, 'entity' FROM ent_top
    )
    GROUP BY id
),
base2 AS (
    SELECT *, $w_sem * semantic + $w_kw * keyword * CASE WHEN $use_sem AND $w_sem > 0 THEN semantic ELSE 1 END + $w_ent * entity + $w_rec * recency + $w_slot * slot
              + $w_person * person + $w_time * time AS base_sum
    FROM (SELECT c.id, c.by_semantic, c.by_keyword, c.by_entity, greatest(coalesce(sem2.cosine, 0), 0) AS semantic,
                 g.* EXCLUDE (id)
          FROM candidates2 c
          JOIN sig g ON g.id = c.id
          LEFT JOIN sem2 ON sem2.id = c.id)
),
anchor2 AS (
    SELECT valid_at AS anchor_at, episode_key AS anchor_key, time_stated AS anchor_stated, nb_pos AS anchor_pos,
           nb_run AS anchor_run
    FROM base2 ORDER BY base_sum DESC, id LIMIT 1
),
pass2 AS (
    SELECT b.* EXCLUDE (base_sum, valid_at, episode_key, time_stated, time, nb_pos, nb_run),
           CASE WHEN b.episode_key = a.anchor_key
                  OR (b.time_stated AND a.anchor_stated
                      AND abs(date_diff('second', b.valid_at, a.anchor_at)) <= $episode_minutes * 60)
                  OR (b.nb_run = a.anchor_run AND abs(b.nb_pos - a.anchor_pos) <= $nb_window)
                THEN 1.0::DOUBLE ELSE 0.0::DOUBLE END AS episode,
           b.time,
           (b.base_sum + $w_ep * episode)
           / ($w_sem + $w_kw + $w_ent + $w_rec + $w_slot + $w_person + $w_ep + $w_time) AS score
    FROM base2 b CROSS JOIN anchor2 a
    WHERE (SELECT go FROM fb_gate)
)
SELECT * FROM pass1 WHERE NOT (SELECT go FROM fb_gate)
UNION ALL
SELECT * FROM pass2
ORDER BY score DESC, id
LIMIT $limit;
