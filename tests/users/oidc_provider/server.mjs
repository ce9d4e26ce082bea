// An OpenID Connect provider for the tests (tests/users/test_oidc_flow.py):
// panva's oidc-provider (certified), on 127.0.0.1 at a free port, with one
// confidential client and the accounts of a JSON file that the test rewrites
// between sign-ins (each account: its claims, e.g. preferred_username and groups).
//
//   node server.mjs CONFIG.json
//
// CONFIG: {"client_id", "client_secret", "redirect_uris": [...], "accounts_file"}.
// Prints one line of JSON, {"issuer": "http://127.0.0.1:PORT"}, once it listens.
// Its login page asks for an account's id only (no password): the test posts it.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const accounts = () => JSON.parse(readFileSync(config.accounts_file, 'utf8'));

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'test-rs256', alg: 'RS256', use: 'sig' };

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: config.client_id,
      client_secret: config.client_secret,
      redirect_uris: config.redirect_uris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
      id_token_signed_response_alg: 'RS256',
    }],
    jwks: { keys: [signingKey] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    scopes: ['openid', 'profile', 'groups'],
    claims: { openid: ['sub'], profile: ['preferred_username'], groups: ['groups'] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    // A first-party client: the grant is given without a consent page.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId
        || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope('openid profile groups');
      await grant.save();
      return grant;
    },
    async findAccount(ctx, id) {
      const account = accounts()[id];
      if (!account) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...account }) };
    },
  });
  const oidc = provider.callback();

  server.on('request', async (req, res) => {
    const match = req.url.match(/^\/interaction\/([\w-]+)(\/login)?$/);
    if (!match) return oidc(req, res);
    try {
      const details = await provider.interactionDetails(req, res);
      if (req.method === 'GET') {
        res.setHeader('Content-Type', 'text/html; charset=utf-8');
        return res.end(`<!doctype html><title>Lab IdP</title>
<form method="post" action="/interaction/${details.uid}/login">
<input name="login" autofocus><button type="submit">Sign in</button></form>`);
      }
      let body = '';
      for await (const chunk of req) body += chunk;
      const login = new URLSearchParams(body).get('login');
      if (!accounts()[login]) {
        res.statusCode = 400;
        return res.end(`no account ${login}`);
      }
      return provider.interactionFinished(req, res, { login: { accountId: login } });
    } catch (error) {
      res.statusCode = 500;
      return res.end(String(error));
    }
  });
  console.log(JSON.stringify({ issuer }));
});
