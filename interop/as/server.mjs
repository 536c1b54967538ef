// A scripted OAuth 2.1 / OpenID Connect authorization server for Tern's
// end-to-end tests, built on oidc-provider (panva, OpenID certified).
//
//   node server.mjs <port> [--access-ttl SECS]
//
// Listens on 127.0.0.1:<port> (0 picks a free port) with the issuer
// http://127.0.0.1:<port>, and prints `listening <port>` on stdout once ready.
//
// - Dynamic Client Registration is open (no initial access token); public
//   clients (token_endpoint_auth_method "none") and native clients with
//   loopback redirect URIs are accepted (oidc-provider lets the loopback port
//   vary for native clients, RFC 8252 section 7.3).
// - PKCE is required for every client, and S256 is the only method.
// - Resource Indicators (RFC 8707): any resource starting with
//   http://127.0.0.1: is accepted; its access tokens are RS256 JWTs with
//   aud = resource, scopes drawn from `mcp` and `deploy:write`.
// - A refresh token is issued when offline_access is requested.
// - There is no login or consent page: every interaction is finished at once
//   as account `alice`, granting every requested scope and resource.

import * as crypto from 'node:crypto';
import * as http from 'node:http';

import Provider, { errors } from 'oidc-provider';

function usage(message) {
  if (message) process.stderr.write(`server.mjs: ${message}\n`);
  process.stderr.write('usage: node server.mjs <port> [--access-ttl SECS]\n');
  process.exit(2);
}

const args = process.argv.slice(2);
let port;
let accessTtl = 3600;
for (let i = 0; i < args.length; i += 1) {
  const arg = args[i];
  if (arg === '--access-ttl') {
    const value = args[i += 1];
    if (!/^[1-9][0-9]*$/.test(value ?? '')) usage('--access-ttl needs a positive whole number of seconds');
    accessTtl = Number(value);
  } else if (arg === '-h' || arg === '--help') {
    usage();
  } else if (port === undefined && /^[0-9]+$/.test(arg) && Number(arg) <= 65535) {
    port = Number(arg);
  } else {
    usage(`unexpected argument ${JSON.stringify(arg)}`);
  }
}
if (port === undefined) usage('missing <port>');

// stdout carries only the `listening <port>` line; oidc-provider's notices
// (console.info) go to stderr with its warnings.
console.info = (...args) => console.error(...args);

const DAY = 24 * 60 * 60;
const ACCOUNT = 'alice';
const RESOURCE_PREFIX = 'http://127.0.0.1:';
const RESOURCE_SCOPES = ['mcp', 'deploy:write'];
const OIDC_SCOPES = ['openid', 'offline_access'];

// The signing key lives only as long as the process; it is published at jwks_uri.
const signingKey = {
  ...crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
  kid: crypto.randomBytes(8).toString('hex'),
  alg: 'RS256',
  use: 'sig',
};

function isAcceptedResource(resource) {
  if (typeof resource !== 'string' || !resource.startsWith(RESOURCE_PREFIX)) return false;
  try {
    const url = new URL(resource);
    return url.protocol === 'http:' && url.hostname === '127.0.0.1' && !url.hash;
  } catch {
    return false;
  }
}

const server = http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(port, '127.0.0.1', resolve);
});
const actualPort = server.address().port;
const issuer = `http://127.0.0.1:${actualPort}`;

const provider = new Provider(issuer, {
  jwks: { keys: [signingKey] },
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  // `scopes` is what discovery publishes as scopes_supported; the resource
  // scopes are listed too so that clients can find them there.
  scopes: [...OIDC_SCOPES, ...RESOURCE_SCOPES],
  claims: { openid: ['sub'] },
  findAccount: async (_ctx, sub) => ({
    accountId: sub,
    claims: async () => ({ sub }),
  }),
  clientDefaults: {
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    id_token_signed_response_alg: 'RS256',
  },
  responseTypes: ['code'],
  pkce: { required: () => true },
  ttl: {
    AccessToken: () => accessTtl,
    AuthorizationCode: 60,
    Grant: DAY,
    Interaction: 10 * 60,
    RefreshToken: DAY,
    Session: DAY,
  },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // Without a resource parameter no resource-bound token is minted.
      defaultResource: async (_ctx, _client, oneOf) => oneOf,
      // A refresh or code exchange without `resource` reuses the granted one.
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resourceIndicator) => {
        if (!isAcceptedResource(resourceIndicator)) throw new errors.InvalidTarget();
        return {
          scope: RESOURCE_SCOPES.join(' '),
          audience: resourceIndicator,
          accessTokenTTL: accessTtl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  interactions: {
    url: (_ctx, interaction) => `/interaction/${interaction.uid}`,
  },
  renderError: async (ctx, out) => {
    ctx.type = 'json';
    ctx.body = out;
  },
});

// The interaction is scripted: log in as alice and grant everything that was
// asked for, in one step, then redirect straight back to the authorization.
async function finishInteraction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { params, prompt, session } = details;
  const clientId = params.client_id;
  if (process.env.AS_DEBUG) {
    process.stderr.write(`interaction ${details.uid}: prompt ${JSON.stringify(prompt)} params ${JSON.stringify(params)} session ${JSON.stringify(session)} grantId ${details.grantId}\n`);
  }

  let grant;
  if (details.grantId) {
    grant = await provider.Grant.find(details.grantId);
  }
  if (!grant) {
    grant = new provider.Grant({ accountId: ACCOUNT, clientId });
  }

  // Every scope in `scopes` (so mcp and deploy:write too) counts as an
  // "OIDC scope" for oidc-provider's consent check, and the resource scopes
  // additionally go to the resource's access token.
  const requested = String(params.scope ?? '').split(' ').filter(Boolean);
  const oidcScopes = new Set([...requested, ...(prompt.details?.missingOIDCScope ?? [])]);
  if (oidcScopes.size) grant.addOIDCScope([...oidcScopes].join(' '));
  if (prompt.details?.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);

  const resources = [params.resource].flat().filter(Boolean);
  const resourceScopes = requested.filter((s) => RESOURCE_SCOPES.includes(s));
  for (const resource of resources) {
    grant.addResourceScope(resource, resourceScopes.join(' '));
  }
  for (const [resource, scopes] of Object.entries(prompt.details?.missingResourceScopes ?? {})) {
    grant.addResourceScope(resource, scopes.join(' '));
  }

  const grantId = await grant.save();
  const result = {
    consent: { grantId },
  };
  if (!session || session.accountId !== ACCOUNT || prompt.name === 'login') {
    result.login = { accountId: ACCOUNT };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

// oidc-provider follows OpenID Connect Core 11: offline_access is dropped
// from an authorization request unless it carries prompt=consent. OAuth 2.1
// clients (MCP ones among them) don't send that, so add it here when
// offline_access is requested without any prompt; the scripted interaction
// grants the consent anyway.
function addConsentPrompt(req, url) {
  if (req.method !== 'GET' || url.pathname !== '/auth') return;
  const scope = url.searchParams.get('scope');
  if (!scope?.split(' ').includes('offline_access') || url.searchParams.has('prompt')) return;
  url.searchParams.set('prompt', 'consent');
  req.url = `${url.pathname}${url.search}`;
}

const callback = provider.callback();
server.on('request', (req, res) => {
  const url = new URL(req.url, issuer);
  const { pathname } = url;
  addConsentPrompt(req, url);
  if (/^\/interaction\/[^/]+$/.test(pathname) && req.method === 'GET') {
    finishInteraction(req, res).catch((err) => {
      process.stderr.write(`interaction failed: ${err.stack ?? err}\n`);
      if (!res.headersSent) {
        res.statusCode = 400;
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ error: 'interaction_failed', error_description: String(err.message ?? err) }));
      } else {
        res.end();
      }
    });
    return;
  }
  callback(req, res);
});

provider.on('server_error', (_ctx, err) => {
  process.stderr.write(`server_error: ${err.stack ?? err}\n`);
});

process.stdout.write(`listening ${actualPort}\n`);

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close();
    process.exit(0);
  });
}
