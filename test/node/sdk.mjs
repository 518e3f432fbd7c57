// Streams and fetches completions from raygw with the official openai npm
// package. Usage: RAYGW_URL=http://127.0.0.1:3000 node sdk.mjs
// Prints one JSON line with what it observed; exits non-zero on failure.
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: `${process.env.RAYGW_URL}/v1`,
  apiKey: process.env.RAYGW_API_KEY || "unused",
  maxRetries: 0,
  timeout: 60_000,
});
const model = process.env.RAYGW_MODEL || "stories";
const messages = [{ role: "user", content: "Once upon a time" }];

const chat = await client.chat.completions.create({ model, messages, max_tokens: 12 });
const stream = await client.chat.completions.create({ model, messages, max_tokens: 16, stream: true });
let chunks = 0;
let text = "";
for await (const chunk of stream) {
  chunks++;
  text += chunk.choices[0]?.delta?.content ?? "";
}
const completion = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 8 });
let notFound = null;
try {
  await client.chat.completions.create({ model: "no-such-model", messages });
} catch (err) {
  notFound = { status: err.status, code: err.code };
}
console.log(JSON.stringify({
  chatText: chat.choices[0].message.content,
  chatModel: chat.model,
  streamChunks: chunks,
  streamText: text,
  completionText: completion.choices[0].text,
  notFound,
}));
